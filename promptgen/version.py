"""promptgen's version, in a module of its own: any module can name it without importing
the package's `__init__`, which re-exports the library API from above every layer."""

__version__ = "0.1.0"
