-- GET one page of 20 items.
wrk.method = "GET"
wrk.path = "/api/items?limit=20"
