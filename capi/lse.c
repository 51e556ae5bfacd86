/* The C API (lse.h) over lse.capi.bridge, which is lse.runtime.api with C's
 * types. This file only converts and manages the GIL: each call takes it with
 * PyGILState_Ensure, so any thread may call; lse_request gives it up while it
 * waits for an event (the bridge blocks in a Python condition wait, which
 * releases it) and while the caller's callback runs, so requests from several
 * threads reach the scheduler together and are batched.
 */
#include "lse.h"

#include "embed.h"

#include <stdlib.h>
#include <string.h>

struct lse_engine {
    PyObject *engine; /* lse.runtime.engine.Engine, or a ModelSet (lse_config.models) */
};

/* The one terminal event when the bridge itself fails (a bug): a 500 in the
   error table's words (runtime/errors.py, internal_error). */
static const char INTERNAL_ERROR[] =
    "{\"error\":{\"message\":\"internal error in the C API; see lse_last_error()\","
    "\"type\":\"server_error\",\"param\":null,\"code\":\"internal_error\"}}";

LSE_API void lse_config_init(lse_config *config) {
    memset(config, 0, sizeof *config); /* every default is 0 or NULL */
}

/* A NULL-terminated array of strings as a Python list (None for NULL); NULL with a Python error set. */
static PyObject *string_list(const char *const *items) {
    if (!items)
        Py_RETURN_NONE;
    PyObject *list = PyList_New(0);
    for (; list && *items; items++) {
        PyObject *item = PyUnicode_FromString(*items);
        if (!item || PyList_Append(list, item) < 0)
            Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

LSE_API lse_engine *lse_open(const lse_config *config) {
    lse_config defaults;
    if (!config) {
        lse_config_init(&defaults);
        config = &defaults;
    }
    PyObject *bridge = lse_bridge();
    if (!bridge)
        return NULL;
    PyGILState_STATE gil = PyGILState_Ensure();
    lse_engine *out = NULL;
    PyObject *engine = NULL;
    PyObject *models = string_list(config->models);
    PyObject *aliases = models ? string_list(config->aliases) : NULL;
    if (aliases) /* "N" hands the lists' references to the call */
        engine = PyObject_CallMethod(bridge, "open_engine", "ziiiiziNNziLd", config->model, config->max_tokens,
                                     config->kv_len, config->parallel, config->disable_cpu_fallback, config->pool,
                                     config->threads, models, aliases, config->default_model, config->models_max,
                                     config->memory_budget, config->keep_alive);
    else
        Py_XDECREF(models);
    if (!engine) {
        lse_set_error_from_python("");
    } else if (!(out = malloc(sizeof *out))) {
        lse_set_error("lse_open: out of memory");
        PyObject *closed = PyObject_CallMethod(bridge, "close", "O", engine);
        Py_XDECREF(closed);
        PyErr_Clear();
        Py_DECREF(engine);
    } else {
        out->engine = engine;
    }
    PyGILState_Release(gil);
    return out;
}

/* Call the user's callback without the GIL; its return value (nonzero = cancel). */
static int deliver(lse_event_fn on_event, void *user, int type, int status, const char *json, size_t len) {
    if (!on_event)
        return 0;
    lse_event event = {(lse_event_type)type, status, json, len};
    int stop;
    Py_BEGIN_ALLOW_THREADS
    stop = on_event(&event, user);
    Py_END_ALLOW_THREADS
    return stop;
}

/* The bridge failed: record why, stop the request if it runs, send one ERROR. */
static int fail_request(PyObject *call, lse_event_fn on_event, void *user) {
    lse_set_error_from_python("lse_request");
    if (call) {
        PyObject *ignored = PyObject_CallMethod(call, "cancel", NULL);
        Py_XDECREF(ignored);
        PyErr_Clear();
    }
    deliver(on_event, user, LSE_EVENT_ERROR, 500, INTERNAL_ERROR, sizeof INTERNAL_ERROR - 1);
    return 500;
}

/* After the callback asked to stop: cancel, wait until the slot is free, return the final status. */
static int cancel_request(PyObject *call, lse_event_fn on_event, void *user) {
    PyObject *status = PyObject_CallMethod(call, "cancel", NULL);
    if (!status)
        return fail_request(NULL, on_event, user);
    int out = (int)PyLong_AsLong(status);
    Py_DECREF(status);
    return out;
}

/* Pass each event to the callback until the terminal one; its status. */
static int run_request(PyObject *call, lse_event_fn on_event, void *user) {
    for (;;) {
        PyObject *event = PyObject_CallMethod(call, "next", NULL);
        int type, status;
        const char *json;
        Py_ssize_t len;
        if (!event || event == Py_None || !PyArg_ParseTuple(event, "iiy#", &type, &status, &json, &len)) {
            if (event == Py_None)
                PyErr_SetString(PyExc_RuntimeError, "the request ended without a DONE or ERROR event");
            Py_XDECREF(event);
            return fail_request(call, on_event, user);
        }
        /* json points into the event's bytes, which live until the DECREF below. */
        int stop = deliver(on_event, user, type, status, json, (size_t)len);
        Py_DECREF(event);
        if (type != LSE_EVENT_CHUNK)
            return status;
        if (stop)
            return cancel_request(call, on_event, user);
    }
}

LSE_API int lse_request(lse_engine *engine, const char *endpoint, const char *body_json, lse_event_fn on_event,
                        void *user) {
    if (!engine || !endpoint || !body_json) {
        lse_set_error("lse_request: engine, endpoint and body_json must not be NULL");
        return -1;
    }
    PyObject *bridge = lse_bridge();
    if (!bridge)
        return -1;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *call = PyObject_CallMethod(bridge, "Call", "Osy", engine->engine, endpoint, body_json);
    int status = call ? run_request(call, on_event, user) : fail_request(NULL, on_event, user);
    Py_XDECREF(call);
    PyGILState_Release(gil);
    return status;
}

/* JSON bytes as a malloc'd C string, or NULL with lse_last_error() set. */
static char *copy_json(PyObject *json) {
    char *out = malloc((size_t)PyBytes_GET_SIZE(json) + 1);
    if (out)
        memcpy(out, PyBytes_AS_STRING(json), (size_t)PyBytes_GET_SIZE(json) + 1);
    else
        lse_set_error("out of memory");
    return out;
}

/* The Python bridge for a call on engine, or NULL with lse_last_error() set. */
static PyObject *bridge_for(lse_engine *engine) {
    if (!engine) {
        lse_set_error("the engine is NULL");
        return NULL;
    }
    return lse_bridge();
}

/* A bridge function's JSON bytes as a malloc'd C string, or NULL with lse_last_error() set. */
static char *json_of(lse_engine *engine, const char *function) {
    PyObject *bridge = bridge_for(engine);
    if (!bridge)
        return NULL;
    PyGILState_STATE gil = PyGILState_Ensure();
    char *out = NULL;
    PyObject *json = PyObject_CallMethod(bridge, function, "O", engine->engine);
    if (!json || !PyBytes_Check(json))
        lse_set_error_from_python(function);
    else
        out = copy_json(json);
    Py_XDECREF(json);
    PyGILState_Release(gil);
    return out;
}

LSE_API char *lse_model_info_named(lse_engine *engine, const char *name) {
    PyObject *bridge = bridge_for(engine);
    if (!bridge)
        return NULL;
    PyGILState_STATE gil = PyGILState_Ensure();
    char *out = NULL;
    int status = 0;
    PyObject *json = NULL;
    /* (status, JSON bytes): the info, or a refusal's error body */
    PyObject *reply = PyObject_CallMethod(bridge, "model_info", "Oz", engine->engine, name);
    if (!reply || !PyArg_ParseTuple(reply, "iS", &status, &json) || !PyBytes_Check(json)) {
        lse_set_error_from_python("model_info");
    } else if (status == 200) {
        out = copy_json(json);
    } else {
        lse_set_error(PyBytes_AS_STRING(json)); /* the HTTP error body, e.g. 404 model_not_found */
    }
    Py_XDECREF(reply);
    PyGILState_Release(gil);
    return out;
}

LSE_API char *lse_model_info(lse_engine *engine) { return lse_model_info_named(engine, NULL); }

LSE_API char *lse_status(lse_engine *engine) { return json_of(engine, "status"); }

LSE_API void lse_free(char *p) { free(p); }

LSE_API void lse_close(lse_engine *engine) {
    if (!engine)
        return;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *closed = PyObject_CallMethod(lse_bridge(), "close", "O", engine->engine);
    if (!closed)
        lse_set_error_from_python("lse_close");
    Py_XDECREF(closed);
    Py_DECREF(engine->engine);
    PyGILState_Release(gil);
    free(engine);
}
