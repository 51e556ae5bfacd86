/* A test driver for the C API: opens one engine, runs commands, prints lines.
 *
 *   driver MODEL|- [kv_len=N] [max_tokens=N] [parallel=N] [threads=N] [pool=P] [no_cpu_fallback=1] \
 *          [model+=ITEM]... [alias+=NAME=ALIAS]... [default_model=NAME] [models_max=N] \
 *          -- COMMAND ARGS... [-- COMMAND ARGS...]
 *
 * MODEL "-" is NULL (the default model). model+= and alias+= fill lse_config.models and
 * .aliases (NULL-terminated). Commands:
 *   req PATH BODY          one request: "EVENT type status json" per event, then "RETURN status"
 *   cancel K PATH BODY     the same, the callback returning 1 on the K-th event
 *   threads N PATH BODY    N threads at once, each waiting at a barrier on its second
 *                          event; "ACTIVE n" (engine.active in lse_status past the
 *                          barrier) and "RETURN status" per thread
 *   info / status          "INFO json" / "STATUS json"
 *   named NAME             lse_model_info_named: "INFO json", or "REFUSED error-json" (NAME "-" is NULL)
 * A failed lse_open prints "OPEN_FAILED reason" and exits 2.
 */
#include <lse.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    int cancel_at; /* 0 = never */
    int seen;
    int wait_at; /* 0 = never; else the event at which to meet the other threads */
    lse_engine *engine;
} watch;

/* A barrier that gives up after 60 s, so a test fails instead of hanging. */
static pthread_mutex_t meet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cond = PTHREAD_COND_INITIALIZER;
static int meet_needed, meet_arrived;

static void meet(void) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&meet_lock);
    if (++meet_arrived >= meet_needed)
        pthread_cond_broadcast(&meet_cond);
    int rc = 0;
    while (meet_arrived < meet_needed && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&meet_cond, &meet_lock, &until);
    pthread_mutex_unlock(&meet_lock);
}

static int active_now(lse_engine *engine) {
    char *status = lse_status(engine);
    const char *at = status ? strstr(status, "\"active\":") : NULL;
    int active = at ? atoi(at + strlen("\"active\":")) : -1;
    lse_free(status);
    return active;
}

static int on_event(const lse_event *event, void *user) {
    watch *w = user;
    w->seen++;
    pthread_mutex_lock(&out_lock);
    printf("EVENT %d %d %s\n", event->type, event->status, event->json);
    if (strlen(event->json) != event->json_len)
        printf("BAD_LENGTH %zu %zu\n", strlen(event->json), event->json_len);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
    if (w->wait_at && w->seen == w->wait_at) {
        meet();
        int active = active_now(w->engine);
        pthread_mutex_lock(&out_lock);
        printf("ACTIVE %d\n", active);
        pthread_mutex_unlock(&out_lock);
    }
    return w->cancel_at && w->seen == w->cancel_at;
}

typedef struct {
    lse_engine *engine;
    const char *path, *body;
    watch w;
    int status;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    j->status = lse_request(j->engine, j->path, j->body, on_event, &j->w);
    return NULL;
}

static void threads(lse_engine *engine, int n, const char *path, const char *body) {
    job jobs[16];
    pthread_t ids[16];
    meet_needed = n;
    for (int i = 0; i < n; i++) {
        jobs[i] = (job){engine, path, body, {0, 0, 2, engine}, 0};
        pthread_create(&ids[i], NULL, run_job, &jobs[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(ids[i], NULL);
        printf("RETURN %d\n", jobs[i].status);
    }
}

static void print_json(const char *tag, char *json) {
    printf("%s %s\n", tag, json ? json : lse_last_error());
    lse_free(json);
}

/* Runs the command at argv[0]; returns how many words it used. */
static int command(lse_engine *engine, char **argv) {
    watch w = {0, 0, 0, engine};
    if (!strcmp(argv[0], "req")) {
        printf("RETURN %d\n", lse_request(engine, argv[1], argv[2], on_event, &w));
        return 3;
    }
    if (!strcmp(argv[0], "cancel")) {
        w.cancel_at = atoi(argv[1]);
        printf("RETURN %d\n", lse_request(engine, argv[2], argv[3], on_event, &w));
        return 4;
    }
    if (!strcmp(argv[0], "threads")) {
        threads(engine, atoi(argv[1]), argv[2], argv[3]);
        return 4;
    }
    if (!strcmp(argv[0], "named")) {
        char *info = lse_model_info_named(engine, strcmp(argv[1], "-") ? argv[1] : NULL);
        printf("%s %s\n", info ? "INFO" : "REFUSED", info ? info : lse_last_error());
        lse_free(info);
        return 2;
    }
    if (!strcmp(argv[0], "info") || !strcmp(argv[0], "status")) {
        int info = !strcmp(argv[0], "info");
        print_json(info ? "INFO" : "STATUS", info ? lse_model_info(engine) : lse_status(engine));
        return 1;
    }
    fprintf(stderr, "unknown command %s\n", argv[0]);
    exit(3);
}

static const char *models[16], *aliases[16]; /* NULL-terminated: statics start zeroed */
static int n_models, n_aliases;

static void configure(lse_config *config, const char *setting) {
    const char *value = strchr(setting, '=') + 1;
    if (!strncmp(setting, "model+=", 7) && n_models < 15)
        config->models = models, models[n_models++] = value;
    else if (!strncmp(setting, "alias+=", 7) && n_aliases < 15)
        config->aliases = aliases, aliases[n_aliases++] = value;
    else if (!strncmp(setting, "default_model=", 14))
        config->default_model = value;
    else if (!strncmp(setting, "models_max=", 11))
        config->models_max = atoi(value);
    else if (!strncmp(setting, "kv_len=", 7))
        config->kv_len = atoi(value);
    else if (!strncmp(setting, "max_tokens=", 11))
        config->max_tokens = atoi(value);
    else if (!strncmp(setting, "parallel=", 9))
        config->parallel = atoi(value);
    else if (!strncmp(setting, "threads=", 8))
        config->threads = atoi(value);
    else if (!strncmp(setting, "pool=", 5))
        config->pool = value;
    else if (!strncmp(setting, "no_cpu_fallback=", 16))
        config->disable_cpu_fallback = atoi(value);
}

int main(int argc, char **argv) {
    lse_config config;
    lse_config_init(&config);
    config.model = strcmp(argv[1], "-") ? argv[1] : NULL;
    int i = 2;
    for (; i < argc && strcmp(argv[i], "--"); i++)
        configure(&config, argv[i]);
    lse_engine *engine = lse_open(&config);
    if (!engine) {
        printf("OPEN_FAILED %s\n", lse_last_error());
        return 2;
    }
    while (i < argc && !strcmp(argv[i], "--")) {
        i++;
        i += command(engine, argv + i);
        fflush(stdout);
    }
    lse_close(engine);
    return 0;
}
