/*-------------------------------------------------------------------------
 *
 * session_submit.h
 *	  The ProcessUtility hook that turns DDL into background jobs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BGDDL_SUBMIT_H
#define BGDDL_SUBMIT_H

extern void SessionSubmitInstall(void);

#endif							/* BGDDL_SUBMIT_H */
