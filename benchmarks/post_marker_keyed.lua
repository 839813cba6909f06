-- wrk: post_marker.lua's requests, each with a new Idempotency-Key, as the iOS app sends
-- every write (docs/sync.md). Keys are new across threads and runs: the run's start
-- time, the thread's table address and a count.
local sessions = {}
for id in string.gmatch(os.getenv("BENCH_SESSION_IDS") or os.getenv("BENCH_SESSION_ID") or "", "[^,]+") do
    sessions[#sessions + 1] = id
end
local headers = {["Content-Type"] = "application/json", ["X-User-Id"] = "bench"}
local thread_tag = tostring(headers):sub(8)
local started = os.time()
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
    sent = sent + 1
    headers["Idempotency-Key"] = string.format("bench-%d-%s-%d", started, thread_tag, sent)
    return wrk.format("POST", nil, headers, body)
end
