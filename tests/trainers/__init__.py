"""Helpers for the tests that run each trainer's own package in its own virtual environment."""
