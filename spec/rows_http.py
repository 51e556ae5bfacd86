"""Rows of the HTTP surface around the API (issue #44): HEAD /health, /health
while draining, the key in AzureOpenAI's and Anthropic's headers, CORS
preflights carrying the SDKs' headers, the offline /docs page, and the
startup lines (port taken, devices not present). The documents say little
about these; what LSE chose sits in SETTLED, beside each row."""

from __future__ import annotations

from lse.spec.rows import LSE_API, OPENAI_API, Cite, Rule

HEALTH = Cite(OPENAI_API, "GET /health")
AUTH = Cite(OPENAI_API, "Authentication")
SURFACE = Cite(OPENAI_API, "OpenAI-compatible API")
FALLBACK = Cite(LSE_API, "CPU fallback")
UNIT = "tests/unit/test_api_http_fixes.py checks it over the in-process app"


def rule(id_, cite, text, **kw) -> Rule:
    return Rule(id=id_, cite=cite, text=text, **kw)


ROWS = (
    rule("health.head", HEALTH, "HEAD /health answers as GET /health does (its status, no body), key or not"),
    rule("health.draining", HEALTH, "from SIGTERM until the process exits, /health answers 503 "
         "{status: shutting_down}", manual="needs a SIGTERM while the kit runs; " + UNIT),
    rule("auth.key_headers", AUTH, "with a key set, the key is also accepted bare in an api-key header "
         "(AzureOpenAI) or an x-api-key header (Anthropic)", needs=("auth",)),
    rule("surface.cors_headers", SURFACE, "with --allowed-origins, a preflight from an allowed origin is answered "
         "with the request headers it asks for (the openai JS SDK's x-stainless-*, api-key)",
         manual="needs a server started with --allowed-origins; " + UNIT),
    rule("surface.docs", SURFACE, "GET /docs is an HTML page listing the routes and linking /openapi.json, "
         "served without the key, loading nothing from another host"),
    rule("startup.port_taken", FALLBACK, "lse-server binds its port before it says it listens; on a port in use "
         "it prints one line naming the address and exits 3",
         manual="a process started on a port in use; tests/unit/test_api_listen.py checks lse-server's main on one"),
    rule("startup.devices_line", FALLBACK, "when a device backend comes up, the backends that did not are named "
         "on one line; each one's reason is logged at LSE_LOG_LEVEL=debug",
         manual="startup log lines of the engine; tests/unit/test_startup_lines.py checks them"),
)

SETTLED = {
    "health.head": "load balancers and uptime probes send HEAD; answered as GET, open like GET",
    "health.draining": "503 as load balancers expect of a draining backend (Kubernetes readiness, AWS ALB), so "
                       "they stop sending work while running replies finish; the status word is "
                       "shutting_down, after the server_shutting_down error code",
    "auth.key_headers": "the AzureOpenAI client sends the key as api-key and Anthropic's SDK as x-api-key, with no "
                        "scheme; any one header holding the key is enough, as vLLM and LiteLLM's proxy accept",
    "surface.cors_headers": "the requested headers are reflected (BlackSheep's allow_headers '*') rather than "
                            "listed, since the SDKs add headers between releases; the origin list is the gate",
    "surface.docs": "Swagger UI from a CDN is blank offline and its document needs the key; a static page built "
                    "from the router's table needs neither, and /openapi.json stays the machine-readable source",
    "startup.port_taken": "exit status 3 kept (uvicorn's startup failure status, which scripts may test for); "
                          "the line names the address and the errno text",
    "resp.message.content": "special (control) tokens the model generates are left out of content, as "
                            "llama-server and vLLM (skip_special_tokens) leave them out, except the template's "
                            "think and tool-call markers, which the output parser reads; usage counts them and "
                            "logprobs name them",
    "resp.text": "special tokens are left out of the text as in chat content (see resp.message.content)",
    "startup.devices_line": "the spec's warning naming each declined backend (and its reason) stays for the case "
                            "it is about: no device backend came up, so the CPU interpreter runs the model; when "
                            "one did come up, the others are only not present, so one info line names them",
}
