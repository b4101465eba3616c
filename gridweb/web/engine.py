"""What the site needs to know about the simulation engine."""


def engine_version() -> str:
    """The simulation engine's version, or ``"dev"`` when the engine does not declare one."""
    try:
        import simengine  # (the site answers "dev" when the engine is not installed)
    except ImportError:
        return "dev"
    return str(getattr(simengine, "__version__", "dev"))
