"""A real OpenAI-compatible chat server on loopback for the judge's tests (``POST /v1/chat/completions``).

Two responders:

* :class:`Scripted`: replies (or HTTP errors) from a list, recording every request: reply parsing,
  retries, order and caching, fast.
* :class:`TransformersChat`: greedy generation with a causal LM through its chat template: the offline
  SmolLM2-135M-Instruct GGUF for the end-to-end plumbing test. It is a stand-in, far too small to judge
  anything; the test checks the pipeline, never its ratings.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }


@contextmanager
def serve(respond: Responder) -> Iterator[str]:
    """Run ``respond`` behind ``http://127.0.0.1:<free port>/v1`` for the ``with`` block."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path.rstrip("/") != "/v1/chat/completions":
                status, out = 404, {"error": {"message": f"no route {self.path}"}}
            else:
                status, out = respond(json.loads(body))
            data = json.dumps(out).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class Scripted:
    """Answers request ``i`` with ``script[i]``: a reply text, or an ``int`` HTTP status (an error)."""

    def __init__(self, script: list[str | int], model: str = "scripted") -> None:
        self.script, self.model, self.requests = list(script), model, []

    def __call__(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append(payload)
        step = self.script.pop(0) if self.script else "{}"
        if isinstance(step, int):
            return step, {"error": {"message": f"scripted {step}"}}
        return 200, completion(self.model, step)


class TransformersChat:
    """Greedy chat completions from a causal LM (``gguf_file`` inside ``folder``) through its chat template."""

    def __init__(self, folder: str, gguf_file: str, name: str) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
        self.model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file).eval()
        self.name, self.torch, self.lock = name, torch, threading.Lock()
        self.tokens_out = 0

    def __call__(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        prompt = self.tok.apply_chat_template(payload["messages"], tokenize=False, add_generation_prompt=True)
        enc = self.tok(prompt, return_tensors="pt")
        with self.lock, self.torch.no_grad():
            out = self.model.generate(
                **enc, do_sample=False, max_new_tokens=int(payload.get("max_tokens", 64)),
                pad_token_id=self.tok.eos_token_id,
            )  # fmt: skip
        new = out[0, enc["input_ids"].shape[1] :]
        self.tokens_out += len(new)
        return 200, completion(self.name, self.tok.decode(new, skip_special_tokens=True))
