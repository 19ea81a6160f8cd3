"""Every threshold and choice of a build, in one module: the stage configs and the build config over them.

Why one module: every stage takes the same ``(work dir, BuildConfig)`` pair (see
:mod:`pqb.builders.pipeline`), and each stage reads the part it needs; defining the configs beside
their stages would make the pipeline import every wing and every wing import the pipeline.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
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
    max_sentences: int | None = None
    """At most this many of a user's sentences reach the syntactic profile (``None``: all of them), in the
    split's proportions (:meth:`caps`: 200 → 160 profile and 40 held-out), the first in the order of
    :func:`pqb.builders.seeds.sentence_key`, so the choice is seeded and independent of file order."""
    split_salt: str = "pcfg_lopo_v1|"
    profile_buckets: int = 8  # of 10: SHA-1 mod 10 < 8 → profile (80/20)
    link: LinkMode = "reviewers"
    link_users_per_product: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        if (caps := self.caps()) is not None and (
            caps[0] < self.min_profile or caps[1] < self.min_heldout or sum(caps) < self.min_sentences
        ):
            raise UsageError(
                f"max_sentences {self.max_sentences} keeps {caps[0]} profile and {caps[1]} held-out sentences, "
                f"fewer than a user needs to qualify ({self.min_profile}, {self.min_heldout}, "
                f"{self.min_sentences} in all): raise it"
            )

    def caps(self) -> tuple[int, int] | None:
        """The (profile, held-out) caps :attr:`max_sentences` makes, or ``None``. Capping each side keeps
        qualification what the uncapped counts say (each cap is at least its threshold)."""
        if self.max_sentences is None:
            return None
        n_profile = self.max_sentences * self.profile_buckets // 10
        return n_profile, self.max_sentences - n_profile

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
    encoder_max_sentences: int = field(default=50_000, metadata=_STAGE_RECORDED)
    """At most this many profile sentences train the encoder: the linked users' (the only ones in
    ``sentences.parquet``, as the authors trained on the users who get Gaussians), whole users, picked
    in the order of a seeded SHA-1 of the user id; every linked user when they hold fewer. It bounds the
    profiles stage's memory and training time at any corpus size: the 16-d encoder of a few hundred SVD
    components needs far fewer sentences than a paper-scale domain holds (training costs ~25 ms per
    batch of 128 on one core, so 50,000 sentences and 30 epochs take about 5 minutes). The embedded
    build's linked users hold fewer, so it trains on every one of their profile sentences."""
    error_max_sentences: int | None = field(default=None, metadata=_STAGE_RECORDED)
    """At most this many of a user's profile sentences reach the error profile (``None``: all of them),
    the first in the order of :func:`pqb.builders.seeds.sentence_key` (so they are among those the
    syntactic profile read, and parsed already). The authors read the first 50 in file order."""
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
"""The configuration of ``pqb-build`` with no arguments (:mod:`pqb.builders.pipeline` explains each choice):
the slice's users write ~20 sentences, so a user qualifies with 10 (8 profile, 2 held-out), nothing is capped."""
PAPER = BuildConfig(
    link="reviewers",
    threshold_kind="chi2",
    users=UserConfig(min_sentences=10, min_profile=40, min_heldout=10, max_sentences=200),
    error_max_sentences=50,
)
"""``pqb-build all --preset paper``: the thresholds of the authors' code (a Gaussian needs >= 40 profile and
>= 10 held-out sentences; an error profile reads at most 50 sentences; users kept from 10 sentences),
a syntactic profile capped at 200 sentences, products linked to their own reviewers, the χ²₁₆ threshold."""
PRESETS: dict[str, BuildConfig] = {"embedded": EMBEDDED_DEFAULT, "paper": PAPER}
THRESHOLD_FIELDS = ("min_sentences", "min_profile", "min_heldout", "min_sentence_tokens", "max_sentences")
"""The users stage's thresholds and cap that, with ``error_max_sentences``, tell the presets apart."""


def preset(name: str, **changes: Any) -> BuildConfig:
    """The preset ``name`` with ``changes`` applied; its users thresholds take the build's link rule and seed."""
    if name not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; use one of {', '.join(PRESETS)}")
    cfg = replace(PRESETS[name], **changes)
    if cfg.users is not None:
        link: Any = cfg.link
        users = replace(
            cfg.users, link=link, link_users_per_product=cfg.link_users_per_product, seed=cfg.seed
        )
        cfg = replace(cfg, users=users)
    return cfg


def thresholds_name(users: dict[str, Any], error_max_sentences: int | None) -> str:
    """Which preset's thresholds a build used (its users-stage config and errors cap), or ``custom``."""
    for name, cfg in PRESETS.items():
        mine = cfg.user_config().as_dict()
        if (
            all(users.get(k) == mine[k] for k in THRESHOLD_FIELDS)
            and error_max_sentences == cfg.error_max_sentences
        ):
            return name
    return "custom"
