/* Starting CPython inside a C program, so that it finds LSE with no help from
 * the environment: no PYTHONPATH, no LD_LIBRARY_PATH, no activated venv.
 *
 * The build records the interpreter LSE was installed into
 * (LSE_PYTHON_EXECUTABLE, sys.executable at build time, e.g. a venv's
 * bin/python) and the libpython soname (LSE_LIBPYTHON). The interpreter starts
 * isolated (no PYTHON* variables, no user site) with that executable as its
 * program name: CPython's path configuration then finds pyvenv.cfg beside it
 * and site.py adds that venv's site-packages, .pth files (editable installs)
 * included, exactly as when the executable itself runs (PEP 587, "Python Path
 * Configuration"; Lib/site.py, venv()).
 */
#include "embed.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LSE_PYTHON_EXECUTABLE
#error "LSE_PYTHON_EXECUTABLE is set by the build (setup.py)"
#endif
#ifndef LSE_LIBPYTHON
#error "LSE_LIBPYTHON is set by the build (setup.py)"
#endif

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static PyObject *bridge_module; /* lse.capi.bridge; NULL if starting failed */
static char *start_error;       /* why starting failed */

static _Thread_local char *last_error;

void lse_set_error(const char *message) {
    free(last_error);
    last_error = message ? strdup(message) : NULL;
}

LSE_API const char *lse_last_error(void) { return last_error; }

static char *format_message(const char *context, const char *detail) {
    size_t n = strlen(context) + strlen(detail) + 3;
    char *text = malloc(n);
    if (text)
        snprintf(text, n, "%s%s%s", context, *context ? ": " : "", detail);
    return text;
}

static PyObject *take_exception(void) {
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
#endif
}

/* The pending exception as text (malloc'd); clears it. */
static char *exception_text(void) {
    PyObject *exc = take_exception();
    PyObject *text = NULL;
    if (exc && bridge_module)
        text = PyObject_CallMethod(bridge_module, "startup_reason", "O", exc);
    if (!text && exc) {
        PyErr_Clear();
        text = PyObject_Str(exc);
    }
    const char *utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
    char *out = strdup(utf8 ? utf8 : "unknown Python error");
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(exc);
    return out;
}

void lse_set_error_from_python(const char *context) {
    char *detail = exception_text();
    char *message = detail ? format_message(context, detail) : NULL;
    lse_set_error(message ? message : "out of memory");
    free(message);
    free(detail);
}

static void fail_start(const char *context, const char *detail) {
    start_error = format_message(context, detail ? detail : "unknown error");
}

static void import_bridge(void) {
    bridge_module = PyImport_ImportModule("lse.capi.bridge");
    if (!bridge_module) {
        char *detail = exception_text();
        fail_start("cannot import lse.capi.bridge from " LSE_PYTHON_EXECUTABLE "'s installation", detail);
        free(detail);
    }
}

static void start_python(void) {
    if (Py_IsInitialized()) { /* a Python program loaded liblse: use its interpreter */
        PyGILState_STATE gil = PyGILState_Ensure();
        import_bridge();
        PyGILState_Release(gil);
        return;
    }
    /* Extension modules (numpy, iree) expect libpython's symbols in the global
       scope; when liblse itself was dlopen'ed RTLD_LOCAL they would not be. */
    dlopen(LSE_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0; /* signals stay the host program's */
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, LSE_PYTHON_EXECUTABLE);
    if (!PyStatus_Exception(status))
        status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        fail_start("cannot start Python (" LSE_PYTHON_EXECUTABLE ")", status.err_msg);
        return;
    }
    import_bridge();
    PyEval_SaveThread(); /* every call takes the GIL with PyGILState_Ensure */
}

PyObject *lse_bridge(void) {
    pthread_once(&start_once, start_python);
    if (!bridge_module)
        lse_set_error(start_error ? start_error : "cannot start Python: out of memory");
    return bridge_module;
}
