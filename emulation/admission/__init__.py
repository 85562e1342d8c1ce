"""What a device server admits: fencing epochs (:mod:`~emulation.admission.fencing`),
replays of the same request only (:mod:`~emulation.admission.idempotency`) and bounded
streams and requests (:mod:`~emulation.admission.limits`)."""
