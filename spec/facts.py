"""What the live server serves, read over HTTP, and the capabilities that
decide which rows apply (``Row.needs``).

Capabilities:
  open / auth            no key required / a key required and lse-spec has it
  template / no_template the model has a chat template (thinking.source), so chat can answer
  thinking / no_thinking thinking.supported
  toggle, effort, effort_without_toggle    the template's controls
  levels:<ids>           the level ids in order ("levels:none,on"), naming the fixture's table row
  instruction_levels     two thinking levels differ only by an instruction (Qwen3.8's xhigh and medium)
  small_context          context_length <= SMALL_CONTEXT, so filling it is cheap
  cap                    the operator's --max-tokens cap is known (--max-tokens-cap, or model_info)
  max_new_tokens, max_length   generation_defaults sets them (cheap enough to reach)
  no_limit               no cap, max_new_tokens or max_length: the reply has no limit but the context
  greedy_default         the default temperature is 0 or less
  files_defaults         some default comes from the model's files
  server_temperature     the temperature default came from lse-server --temperature
  log                    lse-spec was given the server's log file
  tool_markers / no_tool_markers   model_info.tool_call_markers names the template's call markers,
                         so tool_choice "required" or a named function can be enforced
  serves                 a one-token completion answers 200: generation works (every scenario that
                         generates needs it, so a server that refuses every request still gets its
                         surface checked)
  fallback_refused       that completion answered 500 cpu_fallback_disabled and lse_status says
                         allowed false (--no-cpu-fallback with an operation lacking a device kernel)
  process                the run starts lse-server and lse processes itself (lse-spec --startup-model):
                         the startup rows, which an HTTP client never sees
  times_out              that completion answered 408 request_timeout (--request-timeout-secs shorter
                         than any generation)
  model_files            lse-spec was given the served model's directory (--model-dir), so the
                         generation defaults can be checked against the files that set them
  embeddings / no_embeddings   POST /v1/embeddings of one string answered 200 / 501 embeddings_disabled
                         (lse-server --embeddings or not); neither where every request times out
  probe_tool_call, probe_tool_text, probe_reasoning
                         a greedy probe reply (with tools offered) had tool_calls, a <tool_call>
                         left in content, or reasoning beside content (LSE's scripted fixtures
                         answer so; random weights almost never do)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lse.spec.client import Client
from lse.spec.rows import CHAT, COMPLETIONS, PATHS

CAPABILITIES = ("open", "auth", "auth_unknown_key", "template", "no_template", "thinking", "no_thinking", "toggle",
                "effort", "effort_without_toggle", "instruction_levels", "small_context", "cap", "max_new_tokens",
                "max_length", "no_limit", "greedy_default", "files_defaults", "server_temperature", "log",
                "tool_markers", "no_tool_markers", "probe_tool_call", "probe_tool_text", "probe_reasoning",
                "serves", "fallback_refused", "times_out", "model_files", "process", "embeddings", "no_embeddings")
LEVELS_PREFIX = "levels:"
SMALL_CONTEXT = 2048
# A file-set limit above this would make reaching it cost more than the whole run.
CHEAP_LIMIT = 256
FILE_SOURCES = ("generation_config.json", "config.json")


class DiscoveryError(Exception):
    """The server did not answer the discovery requests as documented."""


@dataclass(frozen=True)
class Facts:
    url: str
    model_id: str
    context_length: int
    models_entry: dict[str, Any]
    model_info: dict[str, Any]
    status: dict[str, Any]
    cap: int | None
    caps: frozenset[str]
    server_log: str | None = None
    model_dir: str | None = None
    eos_ids: tuple[int, ...] = ()
    probe: dict[str, Any] | None = None  # the one-token completion's answer: {"status", "body"}

    @property
    def thinking(self) -> dict[str, Any]:
        return self.models_entry.get("thinking") or {}

    @property
    def defaults(self) -> dict[str, Any]:
        return self.models_entry.get("generation_defaults") or {}

    @property
    def levels(self) -> list[dict[str, Any]]:
        return [lv for lv in self.thinking.get("levels") or [] if isinstance(lv, dict)]

    @property
    def level_ids(self) -> tuple[str, ...]:
        return tuple(str(lv.get("id")) for lv in self.levels)

    def level(self, level_id: str) -> dict[str, Any]:
        return next(lv for lv in self.levels if lv.get("id") == level_id)

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The endpoints that can answer: chat needs a chat template (thinking.source)."""
        return (CHAT, COMPLETIONS) if "template" in self.caps else (COMPLETIONS,)

    def has(self, needs: tuple[str, ...]) -> bool:
        return set(needs) <= self.caps

    def limit(self) -> int | None:
        """The token limit of a request that sends none (docs/spec/lse-api.md § Output limits, items 2-4)."""
        if self.cap:
            return self.cap
        return self.defaults.get("max_new_tokens")


def discover(client: Client, *, max_tokens_cap: int | None = None, server_log: str | None = None,
             model_dir: str | None = None) -> Facts:
    models = client.get("/v1/models")
    if models.status == 401:
        raise DiscoveryError("GET /v1/models answered 401: the server needs --api-key")
    if models.status != 200 or not isinstance(models.json, dict) or not models.json.get("data"):
        raise DiscoveryError(f"GET /v1/models: received HTTP {models.status} {models.text[:200]!r} / "
                             "documented HTTP 200 with a list of one model")
    entry = models.json["data"][0]
    info = client.get("/v1/lse/model_info")
    status = client.get("/v1/lse/status")
    open_api = client.get("/v1/models", key=False).status == 200
    info_json = info.json if isinstance(info.json, dict) else {}
    cap = max_tokens_cap if max_tokens_cap is not None else _cap_from(info_json)
    context_length = entry.get("context_length")
    if not isinstance(context_length, int) or context_length <= 0:
        raise DiscoveryError(f"/v1/models context_length: received {context_length!r} / documented a positive integer")
    facts = Facts(url=client.url, model_id=str(entry.get("id")), context_length=context_length,
                  models_entry=entry, model_info=info_json,
                  status=status.json if isinstance(status.json, dict) else {},
                  cap=cap or None, caps=frozenset(), server_log=server_log, model_dir=model_dir,
                  eos_ids=_eos_ids(client))
    caps = set(capabilities(facts, open_api=open_api, has_key=client.api_key is not None))
    one = client.post(PATHS[COMPLETIONS], {"prompt": "Hi", "max_tokens": 1})
    fallback = ((facts.status.get("engine") or {}).get("cpu_fallback") or {})
    if one.status == 200:
        caps.add("serves")
    elif one.status == 500 and one.error.get("code") == "cpu_fallback_disabled" and fallback.get("allowed") is False:
        caps.add("fallback_refused")
    elif one.status == 408 and one.error.get("code") == "request_timeout":
        caps.add("times_out")
    if model_dir:
        caps.add("model_files")
    if "times_out" not in caps:  # there a 501 and a 408 race: the rows would be flaky, so neither is shown
        caps |= embeddings_caps(client.post("/v1/embeddings", {"input": "Hi"}))
    if "serves" in caps and "template" in caps:
        caps |= probe_caps(client.post(PATHS[CHAT], probe_request()).json)
    return Facts(**{**facts.__dict__, "caps": frozenset(caps), "probe": {"status": one.status, "body": one.json}})


def embeddings_caps(reply: Any) -> set[str]:
    if reply.status == 200:
        return {"embeddings"}
    return {"no_embeddings"} if reply.status == 501 and reply.error.get("code") == "embeddings_disabled" else set()


def _eos_ids(client: Client) -> tuple[int, ...]:
    """The end-of-turn token ids (/tokenizer_info), so a kit request can ban them and run to its limit."""
    info = client.get("/tokenizer_info").json
    info = info if isinstance(info, dict) else {}
    ids = info.get("eos_token_ids") or ([info["eos_token_id"]] if isinstance(info.get("eos_token_id"), int) else [])
    return tuple(i for i in ids if isinstance(i, int) and not isinstance(i, bool))


PROBE_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                                "parameters": {"type": "object",
                                                               "properties": {"city": {"type": "string"}}}}}


def probe_request() -> dict[str, Any]:
    """A greedy chat turn with a tool on offer, long enough for a short call."""
    return {"messages": [{"role": "user", "content": "What is the weather in Paris?"}], "temperature": 0,
            "max_tokens": 48, "tools": [PROBE_TOOL]}


def probe_caps(body: Any) -> set[str]:
    choices = body.get("choices") if isinstance(body, dict) else None
    message = (choices[0].get("message") or {}) if isinstance(choices, list) and choices else {}
    caps = set()
    if message.get("tool_calls"):
        caps.add("probe_tool_call")
    if "<tool_call>" in (message.get("content") or ""):
        caps.add("probe_tool_text")
    if message.get("reasoning_content") and message.get("content"):
        caps.add("probe_reasoning")
    return caps


def _cap_from(info: dict[str, Any]) -> int | None:
    """The operator's --max-tokens cap, where model_info reports it (0: none)."""
    served = info.get("served") if isinstance(info.get("served"), dict) else {}
    for holder in (info, served):
        for key in ("max_tokens_cap", "max_tokens"):
            value = holder.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def capabilities(facts: Facts, *, open_api: bool, has_key: bool) -> frozenset[str]:
    caps = set()
    caps.add("open" if open_api else "auth" if has_key else "auth_unknown_key")
    thinking = facts.thinking
    caps.add("thinking" if thinking.get("supported") else "no_thinking")
    caps.add("template" if thinking.get("source") else "no_template")
    if thinking.get("toggle"):
        caps.add("toggle")
    if thinking.get("effort"):
        caps.add("effort" if thinking.get("toggle") else "effort_without_toggle")
    caps.add(LEVELS_PREFIX + ",".join(facts.level_ids))
    if _instruction_pair(facts.levels):
        caps.add("instruction_levels")
    if facts.context_length <= SMALL_CONTEXT:
        caps.add("small_context")
    if facts.cap:
        caps.add("cap")
    caps |= _defaults_caps(facts)
    if facts.server_log:
        caps.add("log")
    caps.add("tool_markers" if facts.model_info.get("tool_call_markers") else "no_tool_markers")
    return frozenset(caps)


def _defaults_caps(facts: Facts) -> set[str]:
    gd = facts.defaults
    sources = gd.get("sources") or {}
    caps = set()
    max_new, max_length = gd.get("max_new_tokens"), gd.get("max_length")
    if isinstance(max_new, int) and max_new <= CHEAP_LIMIT and not facts.cap:
        caps.add("max_new_tokens")
    if isinstance(max_length, int) and max_length <= CHEAP_LIMIT + 64:
        caps.add("max_length")
    if not facts.cap and max_new is None and max_length is None:
        caps.add("no_limit")
    temperature = gd.get("temperature")
    if isinstance(temperature, (int, float)) and temperature <= 0:
        caps.add("greedy_default")
    if any(src in FILE_SOURCES for src in sources.values()):
        caps.add("files_defaults")
    if sources.get("temperature") == "server_option":
        caps.add("server_temperature")
    return caps


def _instruction_pair(levels: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(a level with an instruction, one without) that both think: their
    prompts differ only by the instruction."""
    thinking = [lv for lv in levels if lv.get("opens_reasoning")]
    with_ = [lv["id"] for lv in thinking if lv.get("instruction")]
    without = [lv["id"] for lv in thinking if not lv.get("instruction")]
    return (with_[0], without[0]) if with_ and without else None


def instruction_pair(facts: Facts) -> tuple[str, str] | None:
    return _instruction_pair(facts.levels)
