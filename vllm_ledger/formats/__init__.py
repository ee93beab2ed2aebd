"""Renderers of the Report model: terminal table, JSON (schema 1), bot status."""
