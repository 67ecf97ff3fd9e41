"""``fairshare catalog``: what the workload catalog holds, where each figure comes from, and file checks.

``fairshare catalog [list]`` lists the GPU types, the workloads and, for each, on which types it has data,
measured (``m``) or derived (``d``); ``fairshare catalog show MODEL`` prints one workload's throughputs at
every scale and type, each labelled; ``fairshare catalog validate FILE...`` checks catalog files (alone, and
merged over ``--catalog``); ``fairshare catalog calibration`` prints the error of the rule that derives the
modern GPU types. ``--catalog NAME|FILE`` (repeatable, merged in order) chooses the catalog, as it does for
``trace``, ``simulate`` and ``compare``; the default is ``default`` (measured data only).
"""

from __future__ import annotations

import json
from argparse import SUPPRESS, ArgumentParser, Namespace, _ArgumentGroup, _SubParsersAction
from typing import Any

from fairshare.errors import InvalidInputError

__all__ = ["add_catalog_command", "add_catalog_option", "add_debug_option", "catalog_names", "load_cli_catalog"]


def add_catalog_option(p: ArgumentParser | _ArgumentGroup, dest: str = "catalog") -> None:
    """Add the repeatable ``--catalog NAME|FILE`` option."""
    p.add_argument("--catalog", action="append", metavar="NAME|FILE", dest=dest,
                   help="catalog to use: a named catalog (default, modern, physical, ...) or a catalog file; repeat "
                        "to merge several in order, e.g. --catalog modern --catalog mine.json (default: default)")


def catalog_names(args: Namespace) -> tuple[str, ...]:
    """The ``--catalog`` values (given before or after a ``catalog`` subcommand), or ``("default",)``."""
    given = [*(getattr(args, "catalog_parent", None) or ()), *(getattr(args, "catalog", None) or ())]
    return tuple(given or ("default",))


def load_cli_catalog(args: Namespace) -> Any:
    """The merged catalog of ``--catalog``; errors name the option."""
    from fairshare.sim.catalog import load_catalog

    names = catalog_names(args)
    try:
        return load_catalog(names)
    except InvalidInputError as exc:
        if exc.field == "name":
            raise InvalidInputError("--catalog", exc.value, exc.reason) from None
        raise


def _mark(cat: Any, m: int, s: int, g: int) -> str:
    k = int(cat.alone_source[m, s, g])
    if k < 0 or cat.alone[m, s, g] <= 0:
        return "."
    return "d" if cat.sources[k].derived else "m"


def _first_sentence(text: str, limit: int = 110) -> str:
    s = text.split(". ")[0]
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _list(args: Namespace) -> int:
    cat = load_cli_catalog(args)
    s1 = max(cat.scale_index(1), 0)
    if getattr(args, "json", False) or getattr(args, "json_parent", False):
        doc = {"catalog": list(catalog_names(args)),
               "sources": [{"name": s.name, "kind": "derived" if s.derived else "measured",
                            "description": s.description, "license": s.license} for s in cat.sources],
               "gpu_types": list(cat.gpu_types), "scales": list(cat.scales),
               "models": {m: {g: _mark(cat, i, s1, gi) for gi, g in enumerate(cat.gpu_types)}
                          for i, m in enumerate(cat.models)},
               "named_catalogs": _named_catalogs_json()}
        print(json.dumps(doc, indent=1))
        return 0
    print(f"catalog: {' + '.join(catalog_names(args))}  ({len(cat.models)} workloads, {len(cat.gpu_types)} GPU types, "
          f"scales {', '.join(map(str, cat.scales))})")
    print("\nnamed catalogs (--catalog NAME, * = listed here; repeat to merge, e.g. --catalog modern --catalog "
          "mine.json):")
    for line in _named_catalogs(catalog_names(args)):
        print("  " + line)
    print("derivations (add one after a catalog, e.g. --catalog default --catalog scale-out):")
    print("   scale-out        gangs of 16, 32, 64 and 128 GPUs, derived from each workload's scaling up to 8")
    print("   gavel-on-h200    Gavel's ResNet and CycleGAN workloads on the H200, derived from the nearest "
          "measured ones")
    print("\nsources:")
    width = max(len(s.name) for s in cat.sources)
    for s in cat.sources:
        print(f"  {s.name:<{width}}  {'DERIVED ' if s.derived else 'measured'}  {_first_sentence(s.description)}")
    print("\nGPU types: alone figures, measured / derived")
    for g, name in enumerate(cat.gpu_types):
        src = cat.alone_source[:, :, g]
        have = (src >= 0) & (cat.alone[:, :, g] > 0)
        der = sum(int(((src == k) & have).sum()) for k, s in enumerate(cat.sources) if s.derived)
        print(f"  {name:<10} {int(have.sum()) - der:>4} / {der}")
    print("\nworkloads at scale 1 (m measured, d derived, . no data):")
    mw = max(len(m) for m in cat.models)
    widths = [max(3, len(g)) for g in cat.gpu_types]
    print("  " + " " * mw + " " + " ".join(f"{g:>{w}}" for g, w in zip(cat.gpu_types, widths, strict=True)))
    for i, m in enumerate(cat.models):
        print(f"  {m:<{mw}} " + " ".join(f"{_mark(cat, i, s1, g):>{w}}" for g, w in enumerate(widths)))
    if any(s.derived for s in cat.sources):
        print("\nDerived figures are computed by a stated rule, not measured: see `fairshare catalog calibration` "
              "and docs/catalog.md.")
    return 0


def _named_catalogs_json() -> dict[str, Any]:
    """The named catalogs as JSON: parts, GPU types, and whether any figure is derived."""
    from fairshare.sim.catalog import CATALOGS, load_catalog

    return {name: {"parts": list(parts), "gpu_types": list(load_catalog(name).gpu_types),
                   "derived": any(s.derived for s in load_catalog(name).sources)} for name, parts in CATALOGS.items()}


def _named_catalogs(listed: tuple[str, ...]) -> list[str]:
    """One line per named catalog: its name (``*`` if listed now), its parts, its GPU types, derived or not."""
    from fairshare.sim.catalog import CATALOGS, load_catalog

    width = max(len(n) for n in CATALOGS) + 2
    pwidth = max(len(" + ".join(parts)) for parts in CATALOGS.values())
    lines = []
    for name, parts in CATALOGS.items():
        cat = load_catalog(name)
        kind = "some figures derived" if any(s.derived for s in cat.sources) else "measured only"
        mark = "*" if name in listed else " "
        lines.append(f"{mark}{name:<{width}}{' + '.join(parts):<{pwidth}}  {', '.join(cat.gpu_types)} ({kind})")
    return lines


def _show(args: Namespace) -> int:
    cat = load_cli_catalog(args)
    m = cat.model_index(args.model)
    if getattr(args, "json", False) or getattr(args, "json_parent", False):
        rows = []
        for s, scale in enumerate(cat.scales):
            for g, name in enumerate(cat.gpu_types):
                k = int(cat.alone_source[m, s, g])
                if k >= 0:
                    rows.append({"scale": scale, "gpu_type": name, "iterations_per_s": float(cat.alone[m, s, g]),
                                 "source": cat.sources[k].name, "derived": cat.sources[k].derived})
        print(json.dumps({"model": args.model, "alone": rows}, indent=1))
        return 0
    print(f"{args.model}: alone iterations/s (m measured, d derived; 0 = cannot run)")
    keep = [g for g in range(len(cat.gpu_types)) if (cat.alone_source[m, :, g] >= 0).any()]
    print("  scale " + " ".join(f"{cat.gpu_types[g]:>12}" for g in keep))
    for s, scale in enumerate(cat.scales):
        if not (cat.alone_source[m, s, keep] >= 0).any():
            continue
        cells = []
        for g in keep:
            k = int(cat.alone_source[m, s, g])
            cells.append(f"{'-':>12}" if k < 0 else
                         f"{cat.alone[m, s, g]:>10.4g} {'d' if cat.sources[k].derived else 'm'}")
        print(f"  {scale:>5} " + " ".join(cells))
    s1 = cat.scale_index(1)
    if s1 >= 0:
        partners = [(cat.gpu_types[g], int(((cat.pair_source[s1, g, m] >= 0) & (cat.pair[s1, g, m, :, 0] > 0)).sum()))
                    for g in keep]
        print("  co-location partners (scale 1): " + (", ".join(f"{g} {n}" for g, n in partners if n) or "none"))
    used = sorted({int(k) for k in cat.alone_source[m][cat.alone_source[m] >= 0].tolist()})
    print("sources:")
    for k in used:
        src = cat.sources[k]
        print(f"  {src.name} ({'derived' if src.derived else 'measured'}): {src.description}")
    return 0


def _validate(args: Namespace) -> int:
    from fairshare.sim.catalog import inspect_file, load_catalog

    for path in args.files:
        info = inspect_file(path)
        kind = "derived" if info.source.derived else "measured"
        print(f"{path}: ok, {kind} part {info.source.name!r}: {len(info.gpu_types)} GPU types "
              f"({', '.join(info.gpu_types)}), {len(info.models)} workloads, scales: "
              f"{', '.join(map(str, info.scales)) or 'none'}; {info.alone_entries} alone figures and "
              f"{info.pair_entries} pair figures")
    if getattr(args, "catalog", None) or getattr(args, "catalog_parent", None):
        merged = load_catalog((*catalog_names(args), *args.files))
        print(f"merged over {' + '.join(catalog_names(args))}: ok, {len(merged.gpu_types)} GPU types, "
              f"{len(merged.models)} workloads")
    return 0


def _calibration(args: Namespace) -> int:
    from fairshare.sim.catalog import load_catalog
    from fairshare.sim.catalog.modern import ALPHA, RULE, calibration, fit_alpha, summary_table

    cat = load_catalog(("gavel-simulation", "h200"))
    alpha, best = fit_alpha(cat)
    print(f"rule {RULE}: S = (B_x/B_r)^(1-alpha) (C_x/C_r)^alpha, alpha = {ALPHA:g} (least squares on the fitted "
          f"pairs: {best:.3f}, clamped to [0, 1] -> {alpha:g})")
    print("error = rule / measured - 1 (positive: the rule is optimistic)\n")
    print(summary_table(calibration(cat)), end="")
    from fairshare.sim.catalog import scaleout

    print(f"\nrule {scaleout.RULE} (gangs of {', '.join(map(str, scaleout.SCALES))} GPUs, --catalog scale-out): "
          "T_s = T_b d^log2(s/b), d = clip((T_b/T_1)^(1/log2 b), 1, 2), b the largest figure (>= 8 GPUs)")
    print("leave-one-out on Gavel's measured scales: the rule applied below 8 GPUs, checked against the "
          "measurement at 8\n")
    print(scaleout.summary_table(scaleout.calibration(cat)), end="")
    return 0


def add_catalog_command(sub: _SubParsersAction[ArgumentParser]) -> None:
    """Add ``fairshare catalog`` (``list``, ``show``, ``validate``, ``calibration``)."""
    c = sub.add_parser("catalog", help="list GPU types and workloads with provenance; show one; validate files",
                       description="List the catalog's GPU types and workloads with the origin of every figure "
                                   "(m measured, d derived), show one workload, validate catalog files, or print "
                                   "the calibration of the rule behind the derived modern GPU types.")
    add_catalog_option(c, dest="catalog_parent")
    c.add_argument("--json", action="store_true", dest="json_parent", help="list/show: print JSON")
    c.set_defaults(func=_list)
    cs = c.add_subparsers(dest="catalog_command", metavar="{list,show,validate,calibration}")
    lst = cs.add_parser("list", help="GPU types, workloads, sources (default)")
    add_catalog_option(lst)
    lst.add_argument("--json", action="store_true", help="print JSON")
    lst.set_defaults(func=_list)
    show = cs.add_parser("show", help="one workload's throughputs at every scale and GPU type, labelled")
    show.add_argument("model", help="workload name, e.g. 'ResNet-50 (batch size 64)'")
    add_catalog_option(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=_show)
    val = cs.add_parser("validate", help="check catalog files (exit 2 naming the file and field if malformed)")
    val.add_argument("files", nargs="+", metavar="FILE")
    add_catalog_option(val)
    val.set_defaults(func=_validate)
    cal = cs.add_parser("calibration", help="error of the rule that derives the modern GPU types")
    cal.set_defaults(func=_calibration)
    for p in (lst, show, val, cal):
        add_debug_option(p)


def add_debug_option(p: ArgumentParser) -> None:
    """``--debug`` on a nested subcommand (the top-level ones get it from :func:`fairshare.cli.build_parser`)."""
    p.add_argument("--debug", action="store_true", default=SUPPRESS, help="print the traceback of any error")
