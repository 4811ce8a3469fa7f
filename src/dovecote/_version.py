"""The one version: ``dovecote --version`` prints it and the wheel is built with it."""

__version__ = "0.1.0"
