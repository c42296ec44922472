"""Persistence for acog-service: every byte that leaves the process lives here."""
