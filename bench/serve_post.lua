-- wrk script for bench/serve_bench.sh: every request posts the same TF Serving predict body
-- (a real JPEG as {"b64": ...}), read from the file named by the BODY environment variable.
local file = assert(io.open(os.getenv("BODY"), "rb"))
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"

-- One machine-readable line at the end: requests/sec, p50 and p99 latency (ms), errors.
done = function(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read +
                 summary.errors.write + summary.errors.timeout
  io.write(string.format("RESULT rps=%.2f p50_ms=%.1f p99_ms=%.1f requests=%d errors=%d\n",
                         summary.requests / seconds, latency:percentile(50) / 1000,
                         latency:percentile(99) / 1000, summary.requests, errors))
end
