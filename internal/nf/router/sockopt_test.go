package router

import "syscall"

func setTTL(fd, ttl int) { syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, syscall.IP_TTL, ttl) }
