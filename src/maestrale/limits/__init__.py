"""Rate and spend limits: configuration, counters (in process or in Redis) and the gateway hook."""
