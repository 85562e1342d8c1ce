"""The reconfiguration loop: a ToE plan, cut into stages, applied without dropping traffic.

- :mod:`~controller.reconfig.toe_run`: the daemon's proposal (the optimizer's
  ``plan_target`` under a ladder of change limits, judged by the policy; pure);
- :mod:`~controller.reconfig.stage_plan`: the typed plan (frozen dataclasses; JSON with a
  schema version only in the journal and the API);
- :mod:`~controller.reconfig.executor`: drain, verify, switch, qualify, undrain per stage,
  journaled step by step, resumable and rolled back on failure;
- :mod:`~controller.reconfig.journal` (and its SQL schema,
  :mod:`~controller.reconfig.journal_schema`): the SQLite journal.
"""
