"""Tiny randomly initialised checkpoints written by tests (no download, seconds to build).

No offline weights exist for BGE-M3, ColBERTv2, cross-encoders or a Qwen3/Llama judge, so
their code paths are exercised with checkpoints built here in the *same file layout* as the real
ones: a 2-layer BERT with a word-level vocabulary covering the tiny dataset, plus the extra heads each
family ships (ColBERT's ``linear.weight`` inside the model file; BGE-M3's ``colbert_linear.pt`` and
``sparse_linear.pt`` beside it). The weights are random and seeded: scores are meaningless but
deterministic, which is all a pipeline test needs.
"""

from __future__ import annotations

import re
from pathlib import Path

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]"]
BASE_WORDS = [
    "a",
    "an",
    "the",
    "and",
    "or",
    "for",
    "with",
    "of",
    "to",
    "in",
    "on",
    "is",
    "it",
    "this",
    "that",
    "yes",
    "no",
    "product",
    "brand",
    "category",
    "features",
    "wireless",
    "controller",
    "switch",
    "racing",
    "wheel",
    "pedals",
    "game",
    "games",
    "headset",
    "mouse",
    "keyboard",
    "red",
    "blue",
    "black",
    "pad",
    "card",
    "memory",
    "charger",
    "cable",
    "gaming",
    "console",
    "rpg",
    "light",
    "long",
    "battery",
    "life",
    "grip",
    "motion",
]
PUNCT = list(".,:;!?'\"()[]/#-_&%+")


def _vocab(extra_text: str = "") -> list[str]:
    words = sorted(set(BASE_WORDS) | set(re.findall(r"[a-z0-9]+", extra_text.lower())))
    letters = list("abcdefghijklmnopqrstuvwxyz0123456789")
    subwords = [f"##{c}" for c in letters]
    seen: list[str] = []
    for tok in SPECIALS + PUNCT + letters + subwords + words:
        if tok not in seen:
            seen.append(tok)
    return seen


def _bert_tokenizer(out: Path, extra_text: str = ""):
    from transformers import BertTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.txt").write_text("\n".join(_vocab(extra_text)) + "\n")
    import inspect

    # transformers 5 takes ``vocab=`` (path or dict); 4.x takes ``vocab_file=``
    key = "vocab" if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters else "vocab_file"
    tok = BertTokenizerFast(**{key: str(out / "vocab.txt")}, do_lower_case=True)
    tok.save_pretrained(out)
    return tok


def _bert_config(vocab_size: int, hidden: int = 32):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=hidden * 2,
        max_position_embeddings=512,  # BGE-M3's default max_length is 512
        initializer_range=0.3,  # large random weights: texts get clearly different vectors
    )


def tiny_bert(out: Path, *, kind: str = "base", extra_text: str = "", seed: int = 0) -> Path:
    """A 2-layer BERT saved with its tokenizer. ``kind``: ``base`` | ``mlm`` | ``classifier``."""
    import torch
    from transformers import BertForMaskedLM, BertForSequenceClassification, BertModel

    torch.manual_seed(seed)
    tok = _bert_tokenizer(out, extra_text)
    cfg = _bert_config(len(tok))
    cls = {"base": BertModel, "mlm": BertForMaskedLM, "classifier": BertForSequenceClassification}[kind]
    if kind == "classifier":
        cfg.num_labels = 1
    cls(cfg).eval().save_pretrained(out)
    return out


def tiny_sentence_transformer(out: Path, *, extra_text: str = "", seed: int = 0) -> Path:
    """A sentence-transformers folder (tiny BERT + mean pooling)."""
    from sentence_transformers import SentenceTransformer, models

    tiny_bert(out / "_bert", extra_text=extra_text, seed=seed)
    word = models.Transformer(str(out / "_bert"), max_seq_length=64)
    dim = getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension
    pool = models.Pooling(dim(), pooling_mode="mean")
    SentenceTransformer(modules=[word, pool], device="cpu").save(str(out))
    return out


def tiny_cross_encoder(out: Path, *, extra_text: str = "", seed: int = 0) -> Path:
    """A one-logit BERT sequence classifier, the layout sentence-transformers' CrossEncoder loads."""
    return tiny_bert(out, kind="classifier", extra_text=extra_text, seed=seed)


def tiny_colbert(out: Path, *, dim: int = 16, extra_text: str = "", seed: int = 0) -> Path:
    """ColBERTv2 layout: one ``model.safetensors`` with ``bert.*`` encoder keys and ``linear.weight``."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertModel

    torch.manual_seed(seed)
    tok = _bert_tokenizer(out, extra_text)
    cfg = _bert_config(len(tok))
    cfg.architectures = ["HF_ColBERT"]
    bert = BertModel(cfg, add_pooling_layer=False)
    state = {f"bert.{k}": v.contiguous() for k, v in bert.state_dict().items()}
    state["linear.weight"] = torch.randn(dim, cfg.hidden_size) * 0.1
    cfg.save_pretrained(out)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def tiny_bgem3(out: Path, *, extra_text: str = "", seed: int = 0) -> Path:
    """BGE-M3 layout: an encoder checkpoint + ``colbert_linear.pt`` (H→H) + ``sparse_linear.pt`` (H→1)."""
    import torch

    tiny_bert(out, extra_text=extra_text, seed=seed)
    hidden = 32
    torch.manual_seed(seed + 1)
    torch.save(torch.nn.Linear(hidden, hidden).state_dict(), out / "colbert_linear.pt")
    sparse = torch.nn.Linear(hidden, 1)
    torch.nn.init.constant_(sparse.bias, 0.5)  # most tokens get a positive weight, as in a trained head
    torch.save(sparse.state_dict(), out / "sparse_linear.pt")
    return out


CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_causal_lm(out: Path, *, extra_text: str = "", seed: int = 0) -> Path:
    """A 2-layer Qwen2-architecture causal LM with a word-level tokenizer in which yes/no are single tokens."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    out.mkdir(parents=True, exist_ok=True)
    # Byte-level BPE like Qwen/Llama (transformers maps a qwen2 config to its BPE tokenizer class anyway),
    # trained on a word list in which "yes"/"no" (with and without a leading space) are frequent.
    specials = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
    words = _vocab(extra_text + " instruct query document judge relevant answer only system user assistant")
    lines = (
        [" ".join(w for w in words if w.isalnum())] * 3
        + ["yes no Yes No"] * 50
        + ["no yes No Yes"] * 50
        + ["Yes", "No"] * 50
    )
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        lines, vocab_size=700, min_frequency=1, special_tokens=specials, show_progress=False
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>", "<think>", "</think>"],
    )
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out)
    vocab = tok.get_vocab()
    cfg = Qwen2Config(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
        pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["<|im_end|>"],
    )
    Qwen2ForCausalLM(cfg).eval().save_pretrained(out)
    return out


def tiny_seq2seq(out: Path, *, favour: str | None = None, prefix: str | None = None, seed: int = 0) -> Path:
    """A 1-layer BART text-to-text model with a word-level tokenizer. Its weights are random, except that
    with ``favour`` the output projection is zeroed and its bias set so that greedy decoding writes that
    word at every step (``None``: the end token at once, an empty output); the output is then known.
    ``prefix`` goes into ``config.json`` as the checkpoint's prompt prefix."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    out.mkdir(parents=True, exist_ok=True)
    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    vocab = {w: i for i, w in enumerate(dict.fromkeys(specials + PUNCT + _vocab()))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    fast.save_pretrained(out)
    cfg = BartConfig(
        vocab_size=len(vocab), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=2, forced_bos_token_id=None,
        forced_eos_token_id=None,
    )  # fmt: skip
    if prefix is not None:
        cfg.prefix = prefix
    model = BartForConditionalGeneration(cfg).eval()
    with torch.no_grad():
        model.lm_head.weight.zero_()
        bias = torch.zeros(1, len(vocab))
        bias[0, vocab[favour] if favour else 2] = 10.0
        model.final_logits_bias.copy_(bias)
    model.save_pretrained(out)
    return out
