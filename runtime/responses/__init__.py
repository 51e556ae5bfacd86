"""The OpenAI Responses API as a wire layer over the chat engine.

``request`` turns a /v1/responses body into a /v1/chat/completions body the
engine parses as it parses any other (one generation path); ``items`` turns
the engine's chat chunks back into Responses items and stream events;
``store`` keeps finished responses for ``previous_response_id`` and GET;
``service`` ties them into a handle with the in-process API's events.
"""
