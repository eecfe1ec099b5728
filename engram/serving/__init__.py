"""The HTTP server around the app: limits against slow, hostile or unlucky clients.

- `request_limits`: request-line and header-field sizes derived from the lexicons' parameter maxima.
- `protocol`: the connection handler (header-read deadline, connection cap, JSON answers to parser errors).
- `runner`: the AppRunner `engram serve` (and the tests) run the app with, plus `run_server`.
- `body_deadline`: the middleware bounding how long a request body may take (and quiet client hang-ups).
- `event_loop`: `ENGRAM_EVENT_LOOP`, uvloop or asyncio under `engram serve`.
- `malloc_thresholds`: fixed glibc mmap/trim thresholds in each serving process (RSS after index builds).
- `gc_tuning`: start-up's objects frozen out of the cyclic collector, and a higher young threshold.
- `log_throttle`: log lines that a flood could repeat thousands of times a second, rate-limited.
"""
