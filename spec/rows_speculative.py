"""The request field of speculative decoding (docs/api.md, Speculative decoding)."""

from __future__ import annotations

from lse.spec.rows import API_DOC, BOTH, Bad, Cite, Good, RequestField

SPECULATIVE = Cite(API_DOC, "Request fields LSE adds > Speculative decoding")

ROWS = (
    RequestField(
        id="req.lse_speculative", cite=SPECULATIVE, endpoints=BOTH, name="lse_speculative", type="boolean",
        default=True, default_source="LSE", valid=(Good(True), Good(False), Good(None)),
        invalid=(Bad(1, param="lse_speculative"), Bad("no", param="lse_speculative")),
        text="lse_speculative: false decodes the request without speculation where the server speculates"),
)

# The field is LSE's own: llama-server turns drafting off per request by a
# draft size of 0 and vLLM has no per-request switch, so a boolean that only
# opts out (the server's --speculative decides whether there is anything to
# opt out of) is the least surprising; null is the default, as for the other
# boolean fields.
SETTLED = {
    "req.lse_speculative": "true by default; false opts this request out of the server's --speculative; the "
                           "reply is the same either way (speculation never changes the output), only its "
                           "speed and timings.draft_n differ",
}
