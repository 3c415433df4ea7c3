"""Scenes made by code (the paper's arm and full body, its Table 2), shared by the tests, the benchmarks, the demo
and the README. Not shipped in the extension."""
