"""The workload catalog: measured alone and co-located throughputs per GPU type, with provenance.

Public names
------------
:class:`Catalog`
    Throughputs of workloads (models) on GPU types at each scale, alone and co-located, with lookups,
    per-round throughput matrices, co-location candidates and provenance (``_catalog.py``).
:class:`Source`
    Where catalog entries come from: a measured file or a derivation model (``_catalog.py``).
:func:`load_catalog`
    Load a named catalog, a shipped part or catalog files (merged, cached) (``files.py``).
:data:`CATALOGS`
    Named catalogs and the parts each merges; ``"default"`` is ``gavel-simulation + h200`` (``files.py``).
:data:`CATALOG_FILES`
    Shipped catalog files by part name (``files.py``).
:data:`DATA_DIR`
    Directory of the packaged data files, ``fairshare/data`` (``files.py``).
:data:`DERIVATIONS`
    Opt-in derived models by name, e.g. ``"gavel-on-h200"`` (``derive.py``).
:func:`inspect_file`, :class:`CatalogFileInfo`
    Read and validate one catalog file on its own; what it holds (``files.py``).

Submodules: :mod:`~fairshare.sim.catalog.colocation` (the rule and the capped b-matching behind
:meth:`Catalog.colocation_candidates`), :mod:`~fairshare.sim.catalog.files` (the file format
``fairshare-catalog/1``, merging and the cache), :mod:`~fairshare.sim.catalog.derive` (opt-in derived
models), :mod:`~fairshare.sim.catalog.modern` (the rule ``modern-v1`` behind the ``"modern"`` catalog's
derived GPU types, its published inputs and its calibration), :mod:`~fairshare.sim.catalog.scaleout` (the
rule ``scale-out-v1`` behind the derivation ``"scale-out"``: gangs of 16 to 128 GPUs, and its calibration).

In the ``"default"`` catalog (measured data only) H200 workloads are models of their own: nothing maps
Gavel's workloads onto the H200 unless a derivation is asked for explicitly (``derive=("gavel-on-h200",)``).
The ``"modern"`` catalog adds T4, A10, L4, A100-40GB, A100-80GB, H100, H200 and the V100-16GB/32GB variants
for every workload, every added figure labelled derived. Data and format: ``docs/catalog.md``.

Examples
--------
>>> cat = load_catalog()
>>> cat.gpu_types, len(cat.models), cat.scales
(('K80', 'P100', 'V100', 'H200'), 32, (1, 2, 4, 8))
"""

from fairshare.sim.catalog._catalog import Catalog, Source
from fairshare.sim.catalog.derive import DERIVATIONS
from fairshare.sim.catalog.files import CATALOG_FILES, CATALOGS, DATA_DIR, CatalogFileInfo, inspect_file, load_catalog

__all__ = ["CATALOGS", "CATALOG_FILES", "DATA_DIR", "DERIVATIONS", "CatalogFileInfo", "Catalog", "Source",
           "inspect_file", "load_catalog"]
