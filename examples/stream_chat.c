/* Stream a chat reply through LSE's C API.
 *
 *   mkdir -p build && cc examples/stream_chat.c -o build/stream_chat $(lse-config --cflags --libs)
 *   ./build/stream_chat [MODEL_DIR] ["your question"]
 *
 * (build/ is git-ignored, so the binary stays out of the checkout.)
 *
 * Each CHUNK event is one chat.completion.chunk, the JSON the HTTP server
 * streams; this prints each chunk's JSON line by line, then the DONE event's
 * stop_reason. A real program would parse them with its JSON library.
 */
#include <lse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int on_event(const lse_event *event, void *user) {
    (void)user;
    switch (event->type) {
    case LSE_EVENT_CHUNK:
        printf("chunk: %s\n", event->json);
        break;
    case LSE_EVENT_DONE: {
        const char *stop = strstr(event->json, "\"stop_reason\":");
        printf("done: %.40s\n", stop ? stop : event->json);
        break;
    }
    case LSE_EVENT_ERROR:
        fprintf(stderr, "error %d: %s\n", event->status, event->json);
        break;
    }
    fflush(stdout);
    return 0; /* nonzero would cancel the request */
}

int main(int argc, char **argv) {
    lse_config config;
    lse_config_init(&config);
    config.model = argc > 1 ? argv[1] : NULL; /* NULL: the default model */
    const char *question = argc > 2 ? argv[2] : "Say hello.";

    lse_engine *engine = lse_open(&config);
    if (!engine) {
        fprintf(stderr, "lse_open failed: %s\n", lse_last_error());
        return 1;
    }
    char body[1024];
    /* The question is put into JSON as is: keep it free of quotes and backslashes here. */
    snprintf(body, sizeof body,
             "{\"messages\": [{\"role\": \"user\", \"content\": \"%s\"}], \"max_tokens\": 32, \"stream\": true}",
             question);
    int status = lse_request(engine, "/v1/chat/completions", body, on_event, NULL);
    lse_close(engine);
    return status == 200 ? 0 : 1;
}
