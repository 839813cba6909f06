-- wrk: GET the URL given on the command line, with BENCH_AUTHORIZATION (when set) as its
-- Authorization header: a server with authentication on.
local authorization = os.getenv("BENCH_AUTHORIZATION")
if authorization then wrk.headers["Authorization"] = authorization end
