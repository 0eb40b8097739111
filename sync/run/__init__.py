"""A run over a fleet's proxies without click: each target read and planned (a fleet without
`targets:` is a run over one implicit target), the promotion gates, the apply run and its
interrupts, drift. sync/commands turns options into these calls and their exits into codes."""
