/* LSE's C API: the in-process engine, with the HTTP server's JSON.
 *
 * Build:  cc app.c $(lse-config --cflags --libs)
 * The program then runs with no extra environment: liblse finds the Python
 * runtime and the LSE installation it was built with.
 *
 * Request bodies, replies and errors are the JSON of the HTTP API
 * (POST /v1/chat/completions, /v1/completions); see docs/spec/lse-api.md.
 */
#ifndef LSE_H
#define LSE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lse_engine lse_engine;

typedef struct lse_config {
    const char *model;        /* model dir, artifact dir or GGUF file; NULL = the default model */
    int max_tokens;           /* operator cap, 0 = none (lse-server --max-tokens) */
    int kv_len;               /* context length, 0 = the server's default */
    int parallel;             /* sequence slots, 0 = lse_open's default (1; lse-server's is auto) */
    int disable_cpu_fallback; /* 1 = refuse the CPU interpreter (--no-cpu-fallback) */
    const char *pool;         /* e.g. "local:0"; NULL = probe as lse-server does */
    int threads;              /* CPU worker threads for a local device, 0 = IREE's default (lse-server --threads) */
    /* Several models behind one engine, as `lse-server A B ...` (docs/c-api.md): each request's "model"
       picks one; each loads on first use. NULL-terminated; each item "PATH" (named as lse-server names it:
       a GGUF file's stem, a directory's name) or "NAME=PATH". NULL = the one `model` above (leave it NULL). */
    const char *const *models;
    const char *const *aliases; /* with models: NULL-terminated "NAME=ALIAS" items (--alias); NULL = none */
    const char *default_model;  /* with models: what a request without "model" gets; NULL = the first */
    int models_max;             /* with models: at most N loaded, 0 = no limit (--models-max) */
    long long memory_budget;    /* with models: bytes of weights + KV caches kept loaded, 0 = no limit */
    double keep_alive;          /* with models: seconds idle before a model is unloaded, 0 = never */
    /* more fields may follow; lse_config_init fills every field with its default (rebuild against the
       header that matches liblse: the struct's size is not versioned) */
} lse_config;

void lse_config_init(lse_config *config);

/* Open an engine (this may compile the model on first use). NULL when startup
   fails; lse_last_error() then says why. Never exits or aborts the process. */
lse_engine *lse_open(const lse_config *config);

/* Why the last call on this thread failed (lse_open's startup error, or a
   NULL from lse_model_info / lse_model_info_named / lse_status). Valid until the next failing call
   on this thread; NULL when none has failed. */
const char *lse_last_error(void);

typedef enum { LSE_EVENT_CHUNK = 1, LSE_EVENT_DONE = 2, LSE_EVENT_ERROR = 3 } lse_event_type;

typedef struct lse_event {
    lse_event_type type;
    int status;       /* HTTP status: 200 for CHUNK and DONE, the error's for ERROR */
    const char *json; /* UTF-8 JSON, NUL-terminated; valid only during the callback */
    size_t json_len;
} lse_event;

/* Return nonzero to cancel the request: its slot is freed, no further events
   come, and lse_request returns once the engine has let go of it. The
   callback runs on the calling thread without holding Python's GIL. */
typedef int (*lse_event_fn)(const lse_event *event, void *user);

/* endpoint: "/v1/chat/completions" or "/v1/completions" (another path: a 404
   ERROR event); body_json: the HTTP request body. Blocks until the request
   ends, calling on_event (which may be NULL) for each event: CHUNK events (when
   "stream": true), then exactly one DONE (the whole reply, as the non-streamed
   HTTP reply) or one ERROR (the status and body the HTTP server would give).
   Returns the status (200, or the error's), or -1 with lse_last_error() set
   when engine, endpoint or body_json is NULL. Several threads may call it on
   one engine at once; their requests are batched like HTTP ones. */
int lse_request(lse_engine *engine, const char *endpoint, const char *body_json, lse_event_fn on_event,
                void *user);

char *lse_model_info(lse_engine *engine); /* JSON, as GET /v1/lse/model_info; lse_free it */
/* One model's info by name or alias, as GET /v1/lse/model_info?model=NAME (a model never
   loaded is loaded first); name NULL = lse_model_info. On a refusal NULL, with lse_last_error()
   the HTTP error body as JSON: an unknown name's 404 {"error": {"code": "model_not_found", ...}}
   (with one model too: a name here is checked, never echoed), a failed load's 500
   "model_load_failed". lse_free it. */
char *lse_model_info_named(lse_engine *engine, const char *name);
char *lse_status(lse_engine *engine);     /* JSON, as GET /v1/lse/status; lse_free it */
void lse_free(char *p);

/* Stop the engine and free it; no lse_request on it may be running. */
void lse_close(lse_engine *engine);

#ifdef __cplusplus
}
#endif

#endif /* LSE_H */
