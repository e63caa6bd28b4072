-- wrk script: GET (or PATCH, with WRK_MODE=patch) random pods of the benchmark data set.
-- Pods are named pod-NNNNNN in namespace ns-(N % namespaces).
local pods = tonumber(os.getenv("WRK_PODS") or "150000")
local namespaces = tonumber(os.getenv("WRK_NAMESPACES") or "10")
local mode = os.getenv("WRK_MODE") or "get"
local counter = 0
local threads = 0

-- Each thread gets its own random sequence (wrk seeds every thread alike otherwise, and
-- identical sequences make every PATCH collide with the other thread's).
setup = function(thread)
  threads = threads + 1
  thread:set("seed", threads)
end

init = function(args)
  math.randomseed(seed * 7919 + os.time())
end

request = function()
  local i = math.random(0, pods - 1)
  local path = string.format("/api/v1/namespaces/ns-%d/pods/pod-%06d", i % namespaces, i)
  if mode == "patch" then
    counter = counter + 1
    local body = string.format('{"metadata":{"labels":{"touched":"%d"}}}', counter % 1000)
    return wrk.format("PATCH", path, {["Content-Type"] = "application/merge-patch+json"}, body)
  end
  return wrk.format("GET", path)
end

done = function(summary, latency, requests)
  io.write(string.format("WRK_ERRORS status=%d connect=%d read=%d write=%d timeout=%d\n", summary.errors.status, summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
  io.write(string.format("WRK p50_ms=%.3f p99_ms=%.3f rps=%.1f errors=%d\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.requests / (summary.duration / 1e6),
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
