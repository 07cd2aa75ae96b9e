# background_ddl: build with PGXS.
#
#   make && make install          build and install into the server found by pg_config
#   make installcheck             pg_regress + TAP tests, each on a throwaway cluster
#                                 with the library preloaded (run as a non-root user)
#
# The whole suite, from a fresh machine as root, is `bash scripts/test`.

MODULE_big = background_ddl
# src/ holds one folder per layer; each uses only the layers before it here:
#   pg/       PostgreSQL's internals, wrapped         citus/    Citus's metadata and nodes
#   catalog/  settings and the extension's tables     capture/  base tables' changes, logged
#   engine/   jobs: shared memory, steps, workers, the scheduler and the kind interface
#   query/    a query's result built in chunks        index/    index builds
#   kinds/    the kinds of job                        session/  the submitting session's hooks
#   sql/      the SQL functions; background_ddl.c loads it all (_PG_init)
OBJS = \
	src/background_ddl.o \
	src/pg/pg_heap_swap.o \
	src/pg/pg_lock.o \
	src/pg/pg_subxact.o \
	src/pg/pg_parallel.o \
	src/pg/pg_relation.o \
	src/pg/pg_scan_ring.o \
	src/citus/pg_citus.o \
	src/citus/citus_nodes.o \
	src/catalog/settings.o \
	src/catalog/catalog_types.o \
	src/catalog/catalog_access.o \
	src/catalog/catalog_job.o \
	src/catalog/catalog_replication.o \
	src/catalog/job_identity.o \
	src/capture/capture_log.o \
	src/capture/capture_tid_map.o \
	src/capture/capture_trigger.o \
	src/engine/job_shmem.o \
	src/engine/job_xact.o \
	src/engine/job_messages.o \
	src/engine/job_step.o \
	src/engine/job_run.o \
	src/engine/job_chunks.o \
	src/engine/job_replica_lag.o \
	src/engine/job_launcher.o \
	src/engine/job_scheduler.o \
	src/engine/job_worker.o \
	src/engine/job_group.o \
	src/engine/kind.o \
	src/query/query_job.o \
	src/query/query_submit.o \
	src/query/query_catchup.o \
	src/query/query_backfill.o \
	src/query/query_column_change.o \
	src/query/query_decompose.o \
	src/query/query_estimate.o \
	src/query/query_driving.o \
	src/query/query_partial_agg.o \
	src/query/query_view_pullup.o \
	src/query/query_functions.o \
	src/index/index_build.o \
	src/index/index_partitions.o \
	src/index/index_chunked.o \
	src/index/index_btree_load.o \
	src/index/index_estimate.o \
	src/kinds/kind_matview.o \
	src/kinds/kind_ctas.o \
	src/kinds/kind_chunked_index.o \
	src/kinds/kind_reindex.o \
	src/kinds/kind_rewrite.o \
	src/kinds/kind_refresh.o \
	src/kinds/kind_index.o \
	src/kinds/kind_citus_index.o \
	src/kinds/kind_partitioned_index.o \
	src/kinds/kind_placeholder.o \
	src/kinds/foreign_key_check.o \
	src/kinds/constraint_rows.o \
	src/kinds/attach_partition.o \
	src/kinds/kind_constraint.o \
	src/kinds/kind_key_constraint.o \
	src/session/session_submit.o \
	src/session/session_statement.o \
	src/session/session_guards.o \
	src/session/session_order.o \
	src/session/session_control.o \
	src/sql/sql_control.o \
	src/sql/sql_explain.o \
	src/sql/sql_submit.o \
	src/sql/sql_monitor.o

EXTENSION = background_ddl
DATA = background_ddl--1.0.sql
PGFILEDESC = "background_ddl - long DDL as resumable background jobs"

REGRESS = submit_validation job_lifecycle cancel_and_wait privileges decomposition transaction_edges pause_resume kinds chains session_order alter_table reindex
REGRESS_OPTS = --inputdir=$(srcdir)/test --temp-config=$(srcdir)/test/regress.conf --temp-instance=./tmp_check

ISOLATION = capture_races cutover_races control_races index_pause_races refresh_swap_races submit_privileges rewrite_races
ISOLATION_OPTS = --inputdir=$(srcdir)/test --temp-config=$(srcdir)/test/regress.conf --temp-instance=./tmp_check_iso

# The parity suite (test/parity): the same scripts run with background_ddl off
# and on, against one expected output (make parity-check).
PARITY = parity_setup parity_constraints parity_ctas parity_matview parity_index parity_session_order parity_alter_table parity_rewrite parity_alter_type parity_cluster parity_jobs
PARITY_OPTS = --inputdir=$(srcdir)/test/parity --temp-config=$(srcdir)/test/regress.conf \
	--dbname=parity $(PARITY)

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

# scripts/lib.sh adds -Werror (COPT) for the tests and CI; a user's build does not fail on a
# newer compiler's new warning.
PG_CPPFLAGS = -I$(srcdir)/src -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare \
	-I$(shell $(PG_CONFIG) --includedir)
# libpq: a job on a Citus cluster talks to its nodes (citus_nodes.c)
SHLIB_LINK_INTERNAL = -L$(shell $(PG_CONFIG) --libdir) -lpq

EXTRA_CLEAN = output_parity_off output_parity_on tmp_check_parity_off tmp_check_parity_on

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# pg_bgddl, the command-line client (client/Makefile), installed next to psql
all: client-all
install: client-install
clean: client-clean
client-all client-install client-clean: client-%:
	$(MAKE) -C client $*
.PHONY: client-all client-install client-clean

# PGXS does not track header dependencies: rebuild everything when one changes
$(OBJS): $(wildcard $(srcdir)/src/*/*.h)

parity-check:
	rc=0; \
	export PGOPTIONS='-c client_min_messages=warning'; \
	$(pg_regress_installcheck) --temp-instance=./tmp_check_parity_off \
		--outputdir=./output_parity_off $(PARITY_OPTS) || rc=1; \
	export PGOPTIONS='-c client_min_messages=warning -c background_ddl=on'; \
	$(pg_regress_installcheck) --temp-instance=./tmp_check_parity_on \
		--outputdir=./output_parity_on $(PARITY_OPTS) || rc=1; \
	exit $$rc
