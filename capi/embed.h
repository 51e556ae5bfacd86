/* liblse's Python side: the interpreter it starts once, and the errors it reports. */
#ifndef LSE_EMBED_H
#define LSE_EMBED_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Exported from liblse; everything else stays inside (-fvisibility=hidden). */
#define LSE_API __attribute__((visibility("default")))

/* Start Python and import lse.capi.bridge, once per process. Returns the
   bridge module (a borrowed reference), or NULL with lse_last_error() set. */
PyObject *lse_bridge(void);

/* lse_last_error()'s text for this thread; NULL clears it. */
void lse_set_error(const char *message);

/* lse_last_error() from the pending Python exception (which this clears),
   worded by the bridge's startup_reason when the bridge is loaded. Needs the GIL. */
void lse_set_error_from_python(const char *context);

#endif
