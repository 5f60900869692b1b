/*
 * The one way the library fails: the place that finds a failure records a
 * status and a message naming what and where (file, JSON path, rank, op,
 * algorithm, step); callers pass the status up unchanged and leave the
 * message alone. The record is per thread; hccn_last_error() shows it.
 * Not installed.
 */
#ifndef HCCN_DEVICE_SIM_FAIL_H
#define HCCN_DEVICE_SIM_FAIL_H

#include <stdarg.h>

#include "hccn/hccn.h"

#define HCCN_SIM_FAIL_MAX 1024   /* bytes of a message, NUL included */

/* Records status and the formatted message as the calling thread's failure
 * (control characters but line breaks become '?') and returns status. */
hccn_status_t hccn_sim_fail(hccn_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
hccn_status_t hccn_sim_vfail(hccn_status_t status, const char *fmt,
                             va_list ap) __attribute__((format(printf, 2, 0)));

/* The status of the calling thread's recorded failure, for a caller whose
 * callee returned -1 or NULL: it is passed up unchanged. With none recorded
 * (a callee that failed without saying why: a bug) it records and returns
 * HCCN_ERR_INTERNAL naming where. */
hccn_status_t hccn_sim_failed(const char *where);

/* Puts the formatted context (the file, rank or op the caller knows and
 * the callee did not) before the recorded message, which stays as it was,
 * and returns the recorded status (hccn_sim_failed). */
hccn_status_t hccn_sim_fail_context(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* The status of the calling thread's recorded failure; HCCN_OK if none. */
hccn_status_t hccn_sim_fail_status(void);

/* For a message about a failed allocation: the recorded one when the
 * recorded failure is HCCN_ERR_NOMEM (it names what), else "out of memory"
 * (an allocation outside the library: json-c's). */
const char *hccn_sim_nomem_msg(void);

/* The calling thread's message ("" if none). */
const char *hccn_sim_fail_msg(void);

/* Forgets the calling thread's failure. */
void hccn_sim_fail_clear(void);

#endif /* HCCN_DEVICE_SIM_FAIL_H */
