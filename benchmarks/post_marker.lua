-- wrk: POST /api/v1/markers with the body the iOS app sends, each request into one of
-- the work sessions in BENCH_SESSION_IDS (comma-separated), chosen at random. With
-- BENCH_IDEMPOTENCY_KEYS=1, each request carries a new Idempotency-Key, as the app sends
-- every write (docs/sync.md): new across threads and runs (the run's start, the
-- thread's table address, a count).
local sessions = {}
for id in string.gmatch(os.getenv("BENCH_SESSION_IDS") or os.getenv("BENCH_SESSION_ID") or "", "[^,]+") do
    sessions[#sessions + 1] = id
end
local headers = {["Content-Type"] = "application/json", ["X-User-Id"] = "bench"}
-- A server with authentication on: BENCH_AUTHORIZATION is the whole header value.
if os.getenv("BENCH_AUTHORIZATION") then headers["Authorization"] = os.getenv("BENCH_AUTHORIZATION") end
local keyed = os.getenv("BENCH_IDEMPOTENCY_KEYS") == "1"
local key_prefix = string.format("bench-%d-%s-", os.time(), tostring(headers):sub(8))
local sent = 0

function setup(thread)
    thread:set("seed", math.random(1, 1000000))
end

function init(args)
    math.randomseed(seed or os.time())
end

request = function()
    local session = sessions[math.random(1, #sessions)]
    local body = '{"work_session_id":"' .. session .. '","label":"bench","color":"#FF8800",' ..
        '"p1":[0,0,1],"p2":[2,0,1],"p3":[2,0,4],"p4":[0,0,4]}'
    if keyed then
        sent = sent + 1
        headers["Idempotency-Key"] = key_prefix .. sent
    end
    return wrk.format("POST", nil, headers, body)
end
