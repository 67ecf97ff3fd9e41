"""GPU product names as NVIDIA GPU feature discovery writes them, and what fairshare's catalog calls them.

GPU feature discovery (GFD) labels every GPU node with ``nvidia.com/gpu.product``: the driver's product name
with spaces replaced by ``-`` (``NVIDIA-A100-SXM4-80GB``, ``Tesla-T4``). Under the ``single`` MIG strategy it
appends the slice profile (``NVIDIA-A100-SXM4-40GB-MIG-1g.5gb``). :data:`PRODUCTS` maps product names to
catalog GPU types; names are compared without regard to case. A product missing from the table is refused
(:func:`catalog_type`): pass a mapping of your own (``plan_snapshot(..., products={"NVIDIA-A10G": "A10"})``,
``fairshare kube plan --product NVIDIA-A10G=A10``), which is looked up first.

A MIG slice is a share of one GPU (:func:`mig_share`): its memory over the GPU's memory
(:data:`GPU_MEMORY_GB`), to the nearest eighth and at least 1/8. MIG cuts an A100 or H100 into eighths of
memory (and sevenths of compute), so ``1g.10gb`` of an 80 GB GPU is 1/8, ``2g.20gb`` 1/4, ``3g.40gb`` and
``4g.40gb`` 1/2 and ``7g.80gb`` the whole GPU. This share is derived (fairshare has no per-slice
measurements): a slice's throughput is taken as its share of the whole GPU's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from fairshare.errors import InvalidInputError

__all__ = ["GPU_MEMORY_GB", "MIG_PROFILE", "PRODUCTS", "catalog_type", "mig_share", "split_mig_product"]

#: GFD product label -> fairshare catalog GPU type (compared case-insensitively). The types are those of the
#: ``modern`` catalog (``K80``, ``P100`` and ``V100`` are also in the ``default`` one). Variants that differ
#: only in form factor (SXM or PCIe) map to one type: the catalog does not tell them apart.
PRODUCTS: Mapping[str, str] = {
    "Tesla-K80": "K80",
    "Tesla-P100-PCIE-16GB": "P100",
    "Tesla-P100-SXM2-16GB": "P100",
    "Tesla-V100-SXM2-16GB": "V100-16GB",
    "Tesla-V100-PCIE-16GB": "V100-16GB",
    "Tesla-V100-SXM2-32GB": "V100-32GB",
    "Tesla-V100-PCIE-32GB": "V100-32GB",
    "Tesla-T4": "T4",
    "NVIDIA-A10": "A10",
    "NVIDIA-L4": "L4",
    "NVIDIA-A100-SXM4-40GB": "A100-40GB",
    "NVIDIA-A100-PCIE-40GB": "A100-40GB",
    "NVIDIA-A100-SXM4-80GB": "A100-80GB",
    "NVIDIA-A100-80GB-PCIe": "A100-80GB",
    "NVIDIA-H100-80GB-HBM3": "H100",
    "NVIDIA-H100-PCIe": "H100",
    "NVIDIA-H100-SXM5-80GB": "H100",
    "NVIDIA-H200": "H200",
    "NVIDIA-H200-141GB-HBM3e": "H200",
}

#: Memory of one GPU of each catalog type that MIG can slice, in GB (what the profile names count in).
GPU_MEMORY_GB: Mapping[str, float] = {"A100-40GB": 40.0, "A100-80GB": 80.0, "H100": 80.0, "H200": 141.0}

#: A MIG profile as the device plugin names it: ``<compute slices>g.<memory>gb`` (``1g.10gb``, ``1g.5gb+me``).
MIG_PROFILE = re.compile(r"^(\d+)g\.(\d+)gb(\+me)?$")

_LOWER = {k.lower(): v for k, v in PRODUCTS.items()}


def split_mig_product(product: str) -> tuple[str, str | None]:
    """``"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"`` -> ``("NVIDIA-A100-SXM4-40GB", "1g.5gb")``; other names unchanged.

    >>> split_mig_product("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"), split_mig_product("Tesla-T4")
    (('NVIDIA-A100-SXM4-40GB', '1g.5gb'), ('Tesla-T4', None))
    """
    base, sep, profile = product.rpartition("-MIG-")
    return (base, profile) if sep and base and profile else (product, None)


def catalog_type(product: str, extra: Mapping[str, str], where: str) -> str:
    """The catalog GPU type of a GFD product name: ``extra`` first (exact name), then :data:`PRODUCTS`.

    Raises
    ------
    InvalidInputError
        Naming ``where`` (the node's label) when the product is in neither.

    Examples
    --------
    >>> catalog_type("NVIDIA-A100-SXM4-80GB", {}, "x"), catalog_type("nvidia-l4", {}, "x")
    ('A100-80GB', 'L4')
    >>> catalog_type("NVIDIA-A10G", {"NVIDIA-A10G": "A10"}, "x")
    'A10'
    """
    if product in extra:
        return extra[product]
    found = _LOWER.get(product.lower())
    if found is None:
        raise InvalidInputError(where, product, "unknown GPU product: fairshare does not know which catalog GPU "
                                "type it is; pass a mapping (plan_snapshot(products={...}) or --product "
                                f"{product}=TYPE)")
    return found


def mig_share(profile: str, gpu_type: str, where: str) -> float:
    """The share of one ``gpu_type`` GPU that a MIG slice of ``profile`` holds: memory eighths, at least 1/8.

    Raises
    ------
    InvalidInputError
        Naming ``where`` if the profile is not ``<n>g.<m>gb`` or the type's memory is unknown.

    Examples
    --------
    >>> mig_share("1g.10gb", "A100-80GB", "x"), mig_share("3g.40gb", "H100", "x"), mig_share("1g.18gb", "H200", "x")
    (0.125, 0.5, 0.125)
    """
    m = MIG_PROFILE.match(profile)
    if m is None:
        raise InvalidInputError(where, profile, "not a MIG profile of the form <n>g.<m>gb (e.g. 1g.10gb)")
    total = GPU_MEMORY_GB.get(gpu_type)
    if total is None:
        raise InvalidInputError(where, profile, f"MIG slices of {gpu_type} are not supported: fairshare knows the "
                                f"memory of {', '.join(GPU_MEMORY_GB)} only")
    eighths = min(8, max(1, round(8 * int(m.group(2)) / total)))
    return eighths / 8
