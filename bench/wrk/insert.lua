-- POST a new small item.
wrk.method = "POST"
wrk.path = "/api/items"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title":"new item","n":42,"tags":["bench","insert"]}'
