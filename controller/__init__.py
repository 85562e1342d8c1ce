"""The controller: daemon, decision logic, executor, journal, northbound API and CLI."""
