-- wrk: POST /api/v1/markers with the body the iOS app sends.
local session = os.getenv("BENCH_SESSION_ID")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-User-Id"] = "bench"
wrk.body = '{"work_session_id":"' .. session .. '","label":"bench","color":"#FF8800",' ..
    '"p1":[0,0,1],"p2":[2,0,1],"p3":[2,0,4],"p4":[0,0,4]}'
