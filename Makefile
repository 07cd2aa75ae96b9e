# background_ddl: build with PGXS.
#
#   make && make install          build and install into the server found by pg_config
#   make installcheck             pg_regress + TAP tests, each on a throwaway cluster
#                                 with the library preloaded (run as a non-root user)
#
# The whole suite, from a fresh machine as root, is `bash scripts/test`.

MODULE_big = background_ddl
OBJS = \
	src/background_ddl.o \
	src/sql_control.o \
	src/sql_explain.o \
	src/sql_submit.o \
	src/sql_monitor.o \
	src/session_submit.o \
	src/session_guards.o \
	src/session_order.o \
	src/session_control.o \
	src/job_launcher.o \
	src/job_scheduler.o \
	src/job_worker.o \
	src/kind.o \
	src/kind_matview.o \
	src/kind_ctas.o \
	src/kind_refresh.o \
	src/kind_index.o \
	src/index_partitions.o \
	src/index_build.o \
	src/index_estimate.o \
	src/kind_placeholder.o \
	src/query_job.o \
	src/query_submit.o \
	src/query_catchup.o \
	src/query_backfill.o \
	src/query_decompose.o \
	src/query_estimate.o \
	src/query_driving.o \
	src/query_partial_agg.o \
	src/query_view_pullup.o \
	src/query_functions.o \
	src/capture_trigger.o \
	src/capture_log.o \
	src/capture_tid_map.o \
	src/job_run.o \
	src/job_replica_lag.o \
	src/job_step.o \
	src/job_identity.o \
	src/job_messages.o \
	src/catalog_job.o \
	src/catalog_access.o \
	src/catalog_types.o \
	src/catalog_replication.o \
	src/job_xact.o \
	src/job_shmem.o \
	src/pg_heap_swap.o \
	src/pg_relation.o \
	src/pg_lock.o \
	src/pg_subxact.o \
	src/pg_citus.o \
	src/citus_nodes.o \
	src/kind_citus_index.o \
	src/settings.o

EXTENSION = background_ddl
DATA = background_ddl--1.0.sql
PGFILEDESC = "background_ddl - long DDL as resumable background jobs"

REGRESS = submit_validation job_lifecycle cancel_and_wait privileges decomposition transaction_edges pause_resume kinds chains session_order
REGRESS_OPTS = --inputdir=$(srcdir)/test --temp-config=$(srcdir)/test/regress.conf --temp-instance=./tmp_check

ISOLATION = capture_races cutover_races control_races index_pause_races refresh_swap_races
ISOLATION_OPTS = --inputdir=$(srcdir)/test --temp-config=$(srcdir)/test/regress.conf --temp-instance=./tmp_check_iso

# The parity suite (test/parity): the same scripts run with background_ddl off
# and on, against one expected output (make parity-check).
PARITY = parity_setup parity_constraints parity_ctas parity_matview parity_index parity_session_order
PARITY_OPTS = --inputdir=$(srcdir)/test/parity --temp-config=$(srcdir)/test/regress.conf \
	--dbname=parity $(PARITY)

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

# scripts/lib.sh adds -Werror (COPT) for the tests and CI; a user's build does not fail on a
# newer compiler's new warning.
PG_CPPFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare \
	-I$(shell $(PG_CONFIG) --includedir)
# libpq: a job on a Citus cluster talks to its nodes (citus_nodes.c)
SHLIB_LINK_INTERNAL = -L$(shell $(PG_CONFIG) --libdir) -lpq

# pg_bgddl, the command-line client, installed next to psql
SCRIPTS_built = client/pg_bgddl
EXTRA_CLEAN = client/pg_bgddl output_parity_off output_parity_on tmp_check_parity_off \
	tmp_check_parity_on

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PostgreSQL's frontend libraries (libpgfeutils, libpgcommon, libpgport: static, from the
# server dev package) and libpq
client/pg_bgddl: client/pg_bgddl.c
	$(CC) $(CFLAGS) $(COPT) -Wall -Wextra -Wno-unused-parameter -I$(shell $(PG_CONFIG) --includedir) \
		-I$(shell $(PG_CONFIG) --includedir)/internal -I$(shell $(PG_CONFIG) --includedir-server) $< \
		-L$(shell $(PG_CONFIG) --pkglibdir) -L$(shell $(PG_CONFIG) --libdir) \
		-lpgfeutils -lpgcommon -lpgport -lpq -lm -o $@

# PGXS does not track header dependencies: rebuild everything when one changes
$(OBJS): $(wildcard $(srcdir)/src/*.h)

parity-check:
	rc=0; \
	export PGOPTIONS='-c client_min_messages=warning'; \
	$(pg_regress_installcheck) --temp-instance=./tmp_check_parity_off \
		--outputdir=./output_parity_off $(PARITY_OPTS) || rc=1; \
	export PGOPTIONS='-c client_min_messages=warning -c background_ddl=on'; \
	$(pg_regress_installcheck) --temp-instance=./tmp_check_parity_on \
		--outputdir=./output_parity_on $(PARITY_OPTS) || rc=1; \
	exit $$rc
