-- wrk: POST /api/v1/markers with the body the iOS app sends, each request into one of
-- the work sessions in BENCH_SESSION_IDS (comma-separated), chosen at random.
local sessions = {}
for id in string.gmatch(os.getenv("BENCH_SESSION_IDS") or os.getenv("BENCH_SESSION_ID") or "", "[^,]+") do
    sessions[#sessions + 1] = id
end
local headers = {["Content-Type"] = "application/json", ["X-User-Id"] = "bench"}

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
    return wrk.format("POST", nil, headers, body)
end
