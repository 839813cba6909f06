-- wrk: POST /api/v1/presence/<session> as one of 1,000 users.
local session = os.getenv("BENCH_SESSION_ID")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
    local body = '{"user_id":"user-' .. math.random(1, 1000) .. '"}'
    return wrk.format(nil, "/api/v1/presence/" .. session, nil, body)
end
