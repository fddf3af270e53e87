"""State sections of the apps added in issue 16 §2, one module per app: models and seed data.

Each section follows one shape so a generic task generator can walk it: record lists whose
records carry an ``id`` (``<prefix>-<n>``, never reused) and a human ``name`` or ``title``,
and a ``next_id`` counter shared by the section's lists. Seed data is fixed (no seed draw):
task authors write criteria against it.
"""
