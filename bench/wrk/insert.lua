-- POST a new small item.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title":"new item","n":42,"tags":["bench","insert"]}'
