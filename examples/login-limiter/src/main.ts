import { loginApp } from './app'
import { loginRoute } from './login'

const port = Number(process.env.PORT ?? 3000)
loginApp(loginRoute()).listen(port, () => {
  console.log(
    `POST http://127.0.0.1:${port}/login {"email":"ann@example.com","password":"correct horse"}`,
  )
})
