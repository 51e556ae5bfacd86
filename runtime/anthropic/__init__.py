"""The Anthropic wire layer: POST /v1/messages and /v1/messages/count_tokens
over the engine's one generation path.

- ``request`` and ``content``: a Messages body checked and translated into
  a chat request (``MessagesRequest``), or the 400 naming the field;
- ``events``: a chat request's chunks as Anthropic's stream events, and
  their fold, the non-streamed Message;
- ``errors``: LSE's errors in Anthropic's envelope;
- ``handle``: submitting a Messages request and reading its events.
"""
