"""The guest kernel: Debian's kernel source, our patch series and config fragments, and a cache
of builds keyed by all three.

    kernel = ensure_kernel(repo_root)   # builds if needed; a cached build is recognised in ms
    kernel.image, kernel.modules_dir, kernel.source_dir
"""

from roadtest.kernel.build import Kernel, Variant, cached_kernel, ensure_kernel, kernel_in
from roadtest.kernel.cache import KEY_VERSION, default_cache_dir
from roadtest.kernel.cli import build_main
from roadtest.kernel.config import config_fragments

__all__ = [
    "KEY_VERSION",
    "Kernel",
    "Variant",
    "build_main",
    "cached_kernel",
    "config_fragments",
    "default_cache_dir",
    "ensure_kernel",
    "kernel_in",
]
