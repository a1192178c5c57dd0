module watchtower/clients/go

go 1.19
