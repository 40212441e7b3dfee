-- POST a correct login for the seeded bench user (each one hashes a password on the server).
wrk.method = "POST"
wrk.path = os.getenv("LOGIN_PATH") or "/api/login"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"username":"bench","password":"bench-password"}'
