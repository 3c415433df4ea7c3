"""Files the core reads and writes: PC2 point caches and the compiled-kernel cache folder."""
