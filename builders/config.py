"""Every threshold and choice of a build, in one module: the stage configs and the build config over them.

Why one module: every stage takes the same ``(work dir, BuildConfig)`` pair (see
:mod:`pqb.builders.pipeline`), and each stage reads the part it needs; defining the configs beside
their stages would make the pipeline import every wing and every wing import the pipeline.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pqb.builders.errors import UsageError

if TYPE_CHECKING:
    from pqb.builders.executor import Executor

LinkMode = Literal["reviewers", "any"]
StageStats = dict[str, Any]
"""What a stage returns and records in its manifest entry (``{"skipped": True, ...}`` when fresh)."""
_STAGE_RECORDED = {"stage_recorded": True}


@dataclass(frozen=True)
class UserConfig:
    """Thresholds and choices of the users stage (recorded in the manifest)."""

    min_sentences: int = 10
    min_profile: int = 8
    min_heldout: int = 2
    min_sentence_tokens: int = 3
    split_salt: str = "pcfg_lopo_v1|"
    profile_buckets: int = 8  # of 10: SHA-1 mod 10 < 8 → profile (80/20)
    link: LinkMode = "reviewers"
    link_users_per_product: int = 4
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EncoderConfig:
    n_components: int = 256
    hidden: int = 128
    dim: int = 16
    tau: float = 0.1
    lr: float = 3e-3
    batch_size: int = 128
    epochs: int = 30
    n_pos: int = 4
    n_neg: int = 8
    svd_n_iter: int = 7
    min_df: int = 2
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FilterConfig:
    """Thresholds of the validity gates. ``semantic_threshold`` applies only when ``semantic`` is on.

    0.6 is calibrated on realizer output, which states every attribute verbatim and so is valid by
    construction: over 1,500 realizer candidates of 30 Video_Games targets, MiniLM cosine to the attribute
    description was min 0.61, p1 0.66, median 0.76. The gate is meant for model back-ends (which can
    drift off-topic); the pipeline turns it on for them and off for the realizer, where it costs minutes
    of CPU and rejects nothing.
    """

    min_words: int = 5
    max_words: int = 40
    semantic: bool = False
    semantic_threshold: float = 0.6
    semantic_model: str = "minilm"

    def __post_init__(self) -> None:
        if not 1 <= self.min_words <= self.max_words:
            raise UsageError(
                f"--min-words {self.min_words} / --max-words {self.max_words}: need 1 <= min <= max "
                "(every candidate would be rejected otherwise)"
            )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairConfig:
    """``distance``: ``sym_kl`` or ``bhattacharyya``. ``max_pairs_tried`` > 1 falls back to the next
    most distant pairs when the farthest one has no valid selection (1 = strictly the farthest pair).
    ``audited_only``: pair only users whose Gaussian passed the audit (``audit["valid"]``: numerics,
    calibration on the audit split, stability). Off by default: users failing it are paired and
    flagged (``audit_valid`` in ``<d>-users``), and the card reports how many pairs have both users
    passing; on the small slice the audit passes few users, and pairing only those leaves a handful
    of pairs (the card and the stage stats say which rule was applied). ``evidence_floor``: users with
    fewer own recovered slips are flagged ``backoff``. ``cosine_gate``: add the MiniLM cosine >= 0.9 gate
    to readability (off by default: the gate is itself a dense retriever; the authors' variant)."""

    distance: str = "sym_kl"
    max_pairs_tried: int = 1
    inject_errors: bool = True
    audited_only: bool = False
    evidence_floor: int = 3
    cosine_gate: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BuildConfig:
    """Everything that decides a build's output besides the source files (recorded in the card)."""

    seed: int = 0
    link: str = "reviewers"
    link_users_per_product: int = 4
    threshold_kind: str = "chi2"
    threshold_q: float = 0.95
    error_backend: str = "symspell"
    generator: str = "realizer"
    generator_kwargs: dict[str, Any] = field(default_factory=dict)
    n_candidates: int = 50
    filters: FilterConfig = field(default_factory=FilterConfig)
    pair: PairConfig = field(default_factory=PairConfig)

    source: str | Path | None = field(default=None, metadata=_STAGE_RECORDED)
    """Amazon Reviews 2023: a local folder or the Hub (``None``: ``PQB_AMAZON_DIR``)."""
    strict: bool = field(default=False, metadata=_STAGE_RECORDED)
    """Fail on the first bad input line instead of counting it."""
    category: str | None = field(default=None, metadata=_STAGE_RECORDED)
    """Source category to read (``None``: the one the domain names)."""
    users: UserConfig | None = field(default=None, metadata=_STAGE_RECORDED)
    """Qualification thresholds (``None``: the defaults, with this config's link mode and seed)."""
    encoder: EncoderConfig | None = field(default=None, metadata=_STAGE_RECORDED)
    """Encoder hyper-parameters (``None``: the defaults with this config's seed)."""
    encoder_users: str = field(default="all", metadata=_STAGE_RECORDED)
    """Whose profile sentences train the encoder: ``all`` or ``qualified``."""
    encoder_max_sentences: int = field(default=50_000, metadata=_STAGE_RECORDED)
    """At most this many profile sentences train the encoder (whole users, picked in the order of a
    seeded SHA-1 of the user id; every eligible user when they hold fewer). It bounds the profiles
    stage's memory and training time at any corpus size: the 16-d encoder of a few hundred SVD
    components needs far fewer sentences than a paper-scale domain holds (training costs ~25 ms per batch
    of 128 on one core, so 50,000 sentences and 30 epochs take about 5 minutes). 50,000 is 8× the largest
    embedded domain (6,363), so the embedded build trains on every profile sentence."""
    n_subsamples: int = field(default=20, metadata=_STAGE_RECORDED)
    """Refits of the profile stability audit."""
    n_boot: int = field(default=500, metadata=_STAGE_RECORDED)
    """Bootstrap resamples of the syntactic attribution report."""
    executor: Executor | None = field(default=None, metadata=_STAGE_RECORDED, compare=False)
    """Where the parse maps run (:mod:`pqb.builders.executor`; ``None``: this process). Never recorded
    nor fingerprinted: it does not change a byte of the output."""

    def user_config(self) -> UserConfig:
        link: Any = self.link
        return self.users or UserConfig(
            link=link, link_users_per_product=self.link_users_per_product, seed=self.seed
        )

    def encoder_config(self) -> EncoderConfig:
        return self.encoder or EncoderConfig(seed=self.seed)

    def as_dict(self) -> dict[str, Any]:
        """The choices the card records under ``build.config``. Options marked stage-recorded are left
        out: each stage writes the values it used into its own manifest record, which the card shows."""
        return {
            f.name: asdict(v) if is_dataclass(v := getattr(self, f.name)) else copy.deepcopy(v)
            for f in fields(self)
            if not f.metadata.get("stage_recorded")
        }


EMBEDDED_DEFAULT = BuildConfig(link="any", threshold_kind="heldout", threshold_q=0.95)
"""The configuration of ``pqb-build`` with no arguments (:mod:`pqb.builders.pipeline` explains each choice)."""
