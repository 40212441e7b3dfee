-- GET a random seeded item; ITEMS is the seeded count, PREFIX the route prefix, TOKEN an optional auth token.
local n = tonumber(os.getenv("ITEMS") or "10000")
local prefix = os.getenv("PREFIX") or "/api/items/"
local token = os.getenv("TOKEN")
math.randomseed(os.time())
if token and token ~= "" then
  wrk.headers["X-Auth-Token"] = token
end
request = function()
  return wrk.format("GET", string.format("%sitem-%07d", prefix, math.random(0, n - 1)))
end
