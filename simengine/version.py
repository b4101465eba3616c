"""The engine version, recorded with every result (raise it with any change of results:
docs/development.md). A module of its own so that the engine's modules can read it without
importing the package's public API."""
ENGINE_VERSION = "0.4.5"
