"""``lse-server`` with no model argument serves the default model, and it knows
the capital of France (greedy, so the answer is the same every run)."""

from __future__ import annotations

import openai


def test_default_model_answers_paris(lse_server):
    with lse_server(None) as (base_url, _process):
        with openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=300) as client:
            served = client.models.list().data[0].id
            reply = client.chat.completions.create(
                model=served,
                messages=[{"role": "user", "content": "What is the capital of France?"}],
                temperature=0,
                max_tokens=16,
            )
    assert "Paris" in reply.choices[0].message.content, reply
