-- POST a one-argument call to the method path given as the URL path.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '[{"n":42,"s":"hello"}]'
